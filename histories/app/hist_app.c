/* The application every history runs: it drives SCR's C API one step per argument and checks
 * every byte a restart reads itself, against where the byte belongs. Nothing it prints comes
 * from SCR's records: a restart is "verified" only when every file the checkpoint's layout
 * names was read back whole and right.
 *
 * Checkpoint S (dataset name ckpt.S) has, for each of its WRITERS ranks r, NFILES files
 * ckpt.S/rank_r.k; file k of rank r is file_length(SIZE, r, k) bytes long, byte i being byte
 * i % 8 of the little-endian word (S << 40) | (r << 24) | (k << 16) | (i / 8). So a byte moved
 * to another offset, file, rank or checkpoint fails to verify.
 *
 * Steps:
 *   layout=S:NFILES:SIZE:WRITERS  a checkpoint an earlier run wrote (what a restart checks)
 *   init | finalize               SCR_Init, SCR_Finalize
 *   restart[=list]                the user guide's loop: SCR_Have_restart, SCR_Start_restart,
 *                                 read and check, SCR_Complete_restart, until one verifies or
 *                                 none is left; with another number of ranks than the writers
 *                                 (or =list) the files come from the restart file list, shared
 *                                 out file i to rank i % ranks
 *   ckpt=S:NFILES:SIZE[:BAD]      writes checkpoint S; rank BAD says its files are invalid
 *   quit                          ends without SCR_Finalize, as a job killed there would
 * Rank 0 prints one line per event:
 *   hist: init rc=R | hist: attempt NAME verified=V rc=R (V: 1 every byte right, 0 a byte
 *   wrong, -1 a file SCR would not route or that could not be opened) | hist: restarted NAME |
 *   hist: no restart | hist: ckpt NAME rc=R | hist: finalize rc=R | hist: end */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "scr.h"

#define MAX_LAYOUTS 4096

static int rank, ranks;
static struct layout { long serial, nfiles, size, writers; } layouts[MAX_LAYOUTS];
static int nlayouts;

static long file_length(long size, long r, long k) {
  if (size == 0 || k == 1) return 0;
  return size + 8 * r + 3 * k;
}

static unsigned char pattern(long s, long r, long k, long i) {
  uint64_t w = ((uint64_t)s << 40) | ((uint64_t)(r & 0xffff) << 24) | ((uint64_t)(k & 0xff) << 16) |
               (uint64_t)((i / 8) & 0xffff);
  return (unsigned char)(w >> (8 * (i % 8)));
}

static void say(const char* fmt, const char* name, long a, long b) {
  if (rank == 0) {
    printf(fmt, name, a, b);
    fflush(stdout);
  }
}

static int all_ok(int ok) {
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all;
}

static const struct layout* layout_of(long serial) {
  for (int i = 0; i < nlayouts; i++)
    if (layouts[i].serial == serial) return &layouts[i];
  return NULL;
}

/* writes file k of this rank in checkpoint s at the path SCR routed */
static int write_file(long s, long k, long size) {
  char name[SCR_MAX_FILENAME], path[SCR_MAX_FILENAME];
  snprintf(name, sizeof name, "ckpt.%ld/rank_%d.%ld", s, rank, k);
  if (SCR_Route_file(name, path) != SCR_SUCCESS) return 0;
  FILE* f = fopen(path, "w");
  if (!f) return 0;
  long len = file_length(size, rank, k);
  int ok = 1;
  for (long i = 0; ok && i < len; i++) ok = fputc(pattern(s, rank, k, i), f) != EOF;
  ok = (fflush(f) == 0) && ok;
  return (fclose(f) == 0) && ok;
}

/* checks file `name` (rank r's file k of checkpoint s) where SCR routes it: 1 every byte
 * right, 0 a byte wrong or missing, -1 SCR would not route it or it cannot be opened */
static int check_file(const char* name, long s, long r, long k, long size) {
  char path[SCR_MAX_FILENAME];
  if (SCR_Route_file(name, path) != SCR_SUCCESS) return -1;
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  long len = file_length(size, r, k);
  int ok = 1;
  for (long i = 0; ok && i < len; i++) ok = fgetc(f) == pattern(s, r, k, i);
  ok = ok && fgetc(f) == EOF;
  fclose(f);
  return ok;
}

/* what every rank found: 1 all verified, 0 some byte wrong anywhere, -1 some file unreadable
 * (and no byte wrong) */
static int verdict(int bad, int missing) {
  int v[2] = {bad, missing}, all[2] = {0, 0};
  MPI_Allreduce(v, all, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return all[0] ? 0 : all[1] ? -1 : 1;
}

/* reads the checkpoint SCR started restarting, every byte checked: a verdict */
static int read_checkpoint(const char* dset, int use_list) {
  long s = -1;
  const struct layout* l = sscanf(dset, "ckpt.%ld", &s) == 1 ? layout_of(s) : NULL;
  if (!l) return verdict(1, 0);
  int bad = 0, missing = 0;
#ifdef SCR_HAVE_RESTART_FILE_LIST
  if (use_list || l->writers != ranks) {
    int writers = 0, count = 0, read = 0, all_read = 0;
    bad = SCR_Restart_writers(&writers) != SCR_SUCCESS || writers != l->writers;
    bad = bad || SCR_Restart_file_count(&count) != SCR_SUCCESS;
    /* at the writers' size each rank's list is its own files, all read here */
    int own = writers == ranks, first = own ? 0 : rank, step = own ? 1 : ranks;
    for (int i = first; !bad && i < count; i += step) {
      char name[SCR_MAX_FILENAME];
      long r = -1, k = -1;
      bad = SCR_Restart_file_name(i, name) != SCR_SUCCESS;
      const char* base = strrchr(name, '/');
      bad = bad || sscanf(base ? base + 1 : name, "rank_%ld.%ld", &r, &k) != 2;
      bad = bad || r < 0 || r >= l->writers || k < 0 || k >= l->nfiles;
      int got = bad ? 0 : check_file(name, s, r, k, l->size);
      bad = bad || got == 0;
      missing = missing || got < 0;
      read++;
    }
    MPI_Allreduce(&read, &all_read, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    /* every file of every writer, each read once (the list names no file twice) */
    if (all_read != l->writers * l->nfiles) bad = 1;
    return verdict(bad, missing);
  }
#endif
  (void)use_list;
  if (l->writers != ranks) return verdict(1, 0);
  for (long k = 0; !bad && k < l->nfiles; k++) {
    char name[SCR_MAX_FILENAME];
    snprintf(name, sizeof name, "ckpt.%ld/rank_%d.%ld", s, rank, k);
    int got = check_file(name, s, rank, k, l->size);
    bad = got == 0;
    missing = missing || got < 0;
  }
  return verdict(bad, missing);
}

static void restart(int use_list) {
  for (int attempt = 0; attempt < 256; attempt++) {
    int have = 0;
    char dset[SCR_MAX_FILENAME] = "";
    if (SCR_Have_restart(&have, dset) != SCR_SUCCESS || !all_ok(have)) break;
    if (SCR_Start_restart(dset) != SCR_SUCCESS) {
      say("hist: attempt %s verified=%ld rc=%ld\n", dset, -1, -1);
      break;
    }
    int ok = read_checkpoint(dset, use_list);
    int rc = SCR_Complete_restart(ok == 1);
    say("hist: attempt %s verified=%ld rc=%ld\n", dset, ok, rc);
    if (all_ok(rc == SCR_SUCCESS)) {
      say("hist: restarted %s\n", dset, 0, 0);
      return;
    }
  }
  say("hist: no restart\n", "", 0, 0);
}

static int checkpoint(long s, long nfiles, long size, long bad) {
  char dset[64];
  snprintf(dset, sizeof dset, "ckpt.%ld", s);
  int valid = SCR_Start_output(dset, SCR_FLAG_CHECKPOINT) == SCR_SUCCESS;
  for (long k = 0; k < nfiles; k++) valid = write_file(s, k, size) && valid;
  if (rank == bad) valid = 0;
  int rc = SCR_Complete_output(valid);
  say("hist: ckpt %s rc=%ld\n", dset, rc, 0);
  return rc;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  for (int a = 1; a < argc; a++) {
    const char* s = argv[a];
    long v[4] = {0, 0, 0, -1};
    if (sscanf(s, "layout=%ld:%ld:%ld:%ld", &v[0], &v[1], &v[2], &v[3]) == 4) {
      if (nlayouts < MAX_LAYOUTS) layouts[nlayouts++] = (struct layout){v[0], v[1], v[2], v[3]};
    } else if (!strcmp(s, "init")) {
      int rc = SCR_Init();
      say("hist: init%s rc=%ld\n", "", rc, 0);
    } else if (!strcmp(s, "restart") || !strcmp(s, "restart=list")) {
      restart(!strcmp(s, "restart=list"));
    } else if (sscanf(s, "ckpt=%ld:%ld:%ld:%ld", &v[0], &v[1], &v[2], &v[3]) >= 3) {
      checkpoint(v[0], v[1], v[2], v[3]);
    } else if (!strcmp(s, "finalize")) {
      int rc = SCR_Finalize();
      say("hist: finalize%s rc=%ld\n", "", rc, 0);
    } else if (!strcmp(s, "quit")) {
      break;
    } else {
      if (rank == 0) fprintf(stderr, "hist_app: unknown step %s\n", s);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  say("hist: end%s\n", "", 0, 0);
  MPI_Finalize();
  return 0;
}
