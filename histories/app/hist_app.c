/* The application every history runs: it drives SCR's C API one step per argument and checks
 * every byte a restart reads itself, against where the byte belongs. Nothing it prints comes
 * from SCR's records: a restart is "verified" only when every file the checkpoint's layout
 * names was read back whole and right.
 *
 * Checkpoint S (its content's number in the history) is named ckpt.N, N being the
 * application's step counter: 0 at the start, the restarted checkpoint's N after a restart,
 * one more for each checkpoint it writes. A restart from an older checkpoint therefore
 * writes the names after it again, as a real application would. For each of its WRITERS
 * ranks r it has NFILES files ckpt.N/rank_r.k; file k of rank r is file_length(SIZE, r, k)
 * bytes long, byte i being byte i % 8 of the little-endian word
 * (S << 40) | (r << 24) | (k << 16) | (i / 8). So a byte moved to another offset, file, rank
 * or checkpoint (another checkpoint of the same name among them) fails to verify. Output
 * dataset S is named out.S and written the same way.
 *
 * Steps:
 *   layout=S:N:NFILES:SIZE:WRITERS  a checkpoint an earlier run wrote as ckpt.N (what a
 *                                 restart checks)
 *   init | finalize               SCR_Init, SCR_Finalize
 *   restart[=list]                the user guide's loop: SCR_Have_restart, SCR_Start_restart,
 *                                 read and check, SCR_Complete_restart, until one verifies or
 *                                 none is left; with another number of ranks than the writers
 *                                 (or =list) the files come from the restart file list, shared
 *                                 out file i to rank i % ranks
 *   ckpt=S:NFILES:SIZE[:BAD]      writes checkpoint S as ckpt.<step+1>; rank BAD says its
 *                                 files are invalid
 *   out=S:NFILES:SIZE             writes output dataset S (SCR_FLAG_OUTPUT) as out.S
 *   kill=R:WHEN                   rank R raises SIGKILL in the next dataset: WHEN 0 after
 *                                 SCR_Start_output, 1 after writing its files, 2 after
 *                                 SCR_Complete_output
 *   quit                          ends without SCR_Finalize, as a job killed there would
 * Rank 0 prints one line per event:
 *   hist: init rc=R | hist: attempt NAME verified=V rc=R serials=S,… (V: 1 every byte right,
 *   0 a byte wrong, -1 a file SCR would not route or that could not be opened; S: the
 *   checkpoints of that name whose every byte matched, 0 for none) | hist: restarted NAME |
 *   hist: no restart | hist: ckpt NAME serial=S rc=R | hist: out NAME rc=R |
 *   hist: finalize rc=R | hist: end */
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "scr.h"

#define MAX_LAYOUTS 4096

static int rank, ranks;
static struct layout { long serial, step, nfiles, size, writers; } layouts[MAX_LAYOUTS];
static int nlayouts;
static long step;
static long kill_rank = -1, kill_when = -1;

static long file_length(long size, long r, long k) {
  if (size == 0 || k == 1) return 0;
  return size + 8 * r + 3 * k;
}

static unsigned char pattern(long s, long r, long k, long i) {
  uint64_t w = ((uint64_t)s << 40) | ((uint64_t)(r & 0xffff) << 24) | ((uint64_t)(k & 0xff) << 16) |
               (uint64_t)((i / 8) & 0xffff);
  return (unsigned char)(w >> (8 * (i % 8)));
}

/* HIST_LOG: a file rank 0 also writes its lines to, each written at once, which the driver
 * reads: the launcher may drop what a rank wrote to its stdout when the job aborts */
static FILE* hist_log;

/* rank 0's line, to stdout and the log */
static void hist(const char* fmt, ...) {
  if (rank != 0) return;
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
  if (hist_log) {
    va_start(ap, fmt);
    vfprintf(hist_log, fmt, ap);
    va_end(ap);
    fflush(hist_log);
  }
}

static void say(const char* fmt, const char* name, long a, long b) { hist(fmt, name, a, b); }

static int all_ok(int ok) {
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all;
}

/* the pending kill, if it is this rank's and due at `when` */
static void maybe_die(long when) {
  if (kill_when == when && kill_rank == rank) raise(SIGKILL);
}

/* writes file k of this rank in dataset s (directory dir) at the path SCR routed */
static int write_file(const char* dir, long s, long k, long size) {
  char name[SCR_MAX_FILENAME], path[SCR_MAX_FILENAME];
  snprintf(name, sizeof name, "%s/rank_%d.%ld", dir, rank, k);
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

/* reads the checkpoint SCR started restarting as the one layout `l` describes, every byte
 * checked: a verdict */
static int read_as(const struct layout* l, long n, int use_list) {
  long s = l->serial;
  int bad = 0, missing = 0;
#ifdef SCR_HAVE_RESTART_FILE_LIST
  if (use_list || l->writers != ranks) {
    int writers = 0, count = 0, read = 0, all_read = 0;
    bad = SCR_Restart_writers(&writers) != SCR_SUCCESS || writers != l->writers;
    bad = bad || SCR_Restart_file_count(&count) != SCR_SUCCESS;
    /* at the writers' size each rank's list is its own files, all read here */
    int own = writers == ranks, first = own ? 0 : rank, stride = own ? 1 : ranks;
    for (int i = first; !bad && i < count; i += stride) {
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
    snprintf(name, sizeof name, "ckpt.%ld/rank_%d.%ld", n, rank, k);
    int got = check_file(name, s, rank, k, l->size);
    bad = got == 0;
    missing = missing || got < 0;
  }
  return verdict(bad, missing);
}

/* reads the checkpoint SCR started restarting against every checkpoint of its name: the
 * best verdict (1, else -1, else 0), and in `serials` those that matched every byte */
static int read_checkpoint(const char* dset, int use_list, char* serials, size_t room) {
  long n = -1;
  int best = 0, any = 0;
  serials[0] = '\0';
  if (sscanf(dset, "ckpt.%ld", &n) != 1) return verdict(1, 0);
  for (int i = 0; i < nlayouts; i++) {
    if (layouts[i].step != n) continue;
    any = 1;
    int v = read_as(&layouts[i], n, use_list);
    if (v == 1) {
      size_t used = strlen(serials);
      snprintf(serials + used, room - used, "%s%ld", used ? "," : "", layouts[i].serial);
      best = 1;
    } else if (v == -1 && best == 0) {
      best = -1;
    }
  }
  if (!any) return verdict(1, 0);
  if (!serials[0]) snprintf(serials, room, "0");
  return best;
}

static void restart(int use_list) {
  for (int attempt = 0; attempt < 256; attempt++) {
    int have = 0;
    char dset[SCR_MAX_FILENAME] = "", serials[1024] = "0";
    if (SCR_Have_restart(&have, dset) != SCR_SUCCESS || !all_ok(have)) break;
    if (SCR_Start_restart(dset) != SCR_SUCCESS) {
      hist("hist: attempt %s verified=-1 rc=-1 serials=0\n", dset);
      break;
    }
    int ok = read_checkpoint(dset, use_list, serials, sizeof serials);
    /* what was read, said before SCR_Complete_restart, which may not return */
    hist("hist: read %s verified=%d serials=%s\n", dset, ok, serials);
    int rc = SCR_Complete_restart(ok == 1);
    hist("hist: attempt %s verified=%d rc=%d serials=%s\n", dset, ok, rc, serials);
    if (all_ok(rc == SCR_SUCCESS)) {
      long n = 0;
      if (sscanf(dset, "ckpt.%ld", &n) == 1) step = n;
      say("hist: restarted %s\n", dset, 0, 0);
      return;
    }
  }
  say("hist: no restart\n", "", 0, 0);
}

/* writes dataset s as `dset` (files in directory dset) with `flags`; rank `bad` says its
 * files are invalid */
static int write_dataset(const char* dset, int flags, long s, long nfiles, long size, long bad) {
  int valid = SCR_Start_output(dset, flags) == SCR_SUCCESS;
  maybe_die(0);
  for (long k = 0; k < nfiles; k++) valid = write_file(dset, s, k, size) && valid;
  if (rank == bad) valid = 0;
  maybe_die(1);
  int rc = SCR_Complete_output(valid);
  maybe_die(2);
  return rc;
}

static void checkpoint(long s, long nfiles, long size, long bad) {
  char dset[64];
  snprintf(dset, sizeof dset, "ckpt.%ld", ++step);
  int rc = write_dataset(dset, SCR_FLAG_CHECKPOINT, s, nfiles, size, bad);
  hist("hist: ckpt %s serial=%ld rc=%d\n", dset, s, rc);
}

static void output(long s, long nfiles, long size) {
  char dset[64];
  snprintf(dset, sizeof dset, "out.%ld", s);
  int rc = write_dataset(dset, SCR_FLAG_OUTPUT, s, nfiles, size, -1);
  say("hist: out %s rc=%ld\n", dset, rc, 0);
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const char* log_path = getenv("HIST_LOG");
  if (rank == 0 && log_path && *log_path) hist_log = fopen(log_path, "a");
  for (int a = 1; a < argc; a++) {
    const char* s = argv[a];
    long v[5] = {0, 0, 0, -1, 0};
    if (sscanf(s, "layout=%ld:%ld:%ld:%ld:%ld", &v[0], &v[1], &v[2], &v[3], &v[4]) == 5) {
      if (nlayouts < MAX_LAYOUTS)
        layouts[nlayouts++] = (struct layout){v[0], v[1], v[2], v[3], v[4]};
    } else if (!strcmp(s, "init")) {
      int rc = SCR_Init();
      say("hist: init%s rc=%ld\n", "", rc, 0);
    } else if (!strcmp(s, "restart") || !strcmp(s, "restart=list")) {
      restart(!strcmp(s, "restart=list"));
    } else if (sscanf(s, "ckpt=%ld:%ld:%ld:%ld", &v[0], &v[1], &v[2], &v[3]) >= 3) {
      checkpoint(v[0], v[1], v[2], v[3]);
    } else if (sscanf(s, "out=%ld:%ld:%ld", &v[0], &v[1], &v[2]) == 3) {
      output(v[0], v[1], v[2]);
    } else if (sscanf(s, "kill=%ld:%ld", &v[0], &v[1]) == 2) {
      kill_rank = v[0];
      kill_when = v[1];
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
