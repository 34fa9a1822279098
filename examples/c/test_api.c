/* Example SCR application (C): restarts from the newest checkpoint if there is one,
 * verifies every byte, then writes CKPTS checkpoints of SIZE bytes per rank.
 * Rank r's file k in timestep t holds an 8-byte timestep header, then bytes that say where
 * they belong (see pattern below): a piece of a file moved anywhere else fails to verify.
 * Usage: test_api [SIZE [CKPTS]]; exits 1 on any mismatch (see TEST_API_VARY below).
 * TEST_API_UNTIL=T makes T the last timestep whatever the restart point (a job that must
 * end in the same state however often it was interrupted); CKPTS is then ignored.
 * A checkpoint written by another number of ranks is re-partitioned (with an SCR that lists
 * a restart's files, SCR_HAVE_RESTART_FILE_LIST, and SCR_RESHAPE=1, which tells it this
 * program does; without, SCR does not offer such a checkpoint): every file of it is read by one rank, in
 * turn, and checked against the rank that wrote it (TEST_API_NO_FILE_LIST=1 reads as a
 * program written for SCR v3.1 does, its own rank's files only). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "scr.h"

static int rank, ranks;

/* TEST_API_VARY=1 varies the layout by rank, as real applications do: rank r writes
 * r % 3 files (so some ranks write none); file 0 holds the header and (r + 1) * SIZE / 2
 * bytes, file 1 is empty (zero bytes). Otherwise every rank writes one file of SIZE bytes. */
static int vary;

/* TEST_API_FILES=n: every rank writes n files of SIZE bytes (a checkpoint of many files);
 * TEST_API_NAME_PAD=p puts them in a directory of a p-character name (long paths). */
static int many, pad;

static int files_of(int r);

/* Byte i of the data of file k of rank r at timestep t: byte i % 8 of the little-endian
 * word (t << 56) ^ (r << 40) ^ (k << 32) ^ (i / 8). Every 8 bytes of a checkpoint differ
 * from every other 8 (for fewer than 2^16 ranks, 256 files, 256 timesteps and 32 GiB a
 * file), so a piece swapped, duplicated or misplaced by any transfer fails to verify. */
static unsigned char pattern(int r, int k, int t, long i) {
  uint64_t w = ((uint64_t)t << 56) ^ ((uint64_t)r << 40) ^ ((uint64_t)k << 32) ^ (uint64_t)(i / 8);
  return (unsigned char)(w >> (8 * (i % 8)));
}

static int files_of(int r) { return many > 0 ? many : vary ? r % 3 : 1; }

static void file_name(char* out, size_t n, int t, int k) {
  if (many > 0) snprintf(out, n, "ckpt.%d/%0*d/rank_%d.%d.ckpt", t, pad, 0, rank, k);
  else if (vary) snprintf(out, n, "ckpt.%d/rank_%d.%d.ckpt", t, rank, k);
  else snprintf(out, n, "ckpt.%d/rank_%d.ckpt", t, rank);
}

/* bytes after the header in file k of rank r; -1 means an empty file without header */
static long payload_of(int r, int k, long size) {
  if (!vary) return size;
  return k == 0 ? (r + 1) * size / 2 : -1;
}

static long payload(int k, long size) { return payload_of(rank, k, size); }

/* TEST_API_INVALID=t marks checkpoint t invalid on every rank (to test failure handling). */
static int write_ckpt(int t, long size) {
  char name[SCR_MAX_FILENAME], dset[64], file[SCR_MAX_FILENAME];
  snprintf(dset, sizeof dset, "ckpt.%d", t);
  /* as SCR's own test_api does, a rank whose Start failed still completes the checkpoint
   * (marked invalid): the others wait for it in SCR_Complete_output */
  int valid = SCR_Start_output(dset, SCR_FLAG_CHECKPOINT) == SCR_SUCCESS;
  if (!valid) fprintf(stderr, "test_api: rank %d: SCR_Start_output failed\n", rank);
  for (int k = 0; k < files_of(rank); k++) {
    file_name(name, sizeof name, t, k);
    long len = payload(k, size);
    int ok = 0;
    if (SCR_Route_file(name, file) == SCR_SUCCESS) {
      FILE* f = fopen(file, "w");
      if (f) {
        ok = 1;
        if (len >= 0) {
          long long ts = t;
          ok = fwrite(&ts, sizeof ts, 1, f) == 1;
          char* buf = malloc(len + 1);
          for (long i = 0; i < len; i++) buf[i] = (char)pattern(rank, k, t, i);
          ok = ok && fwrite(buf, 1, len, f) == (size_t)len;
          free(buf);
        }
        ok = (fclose(f) == 0) && ok;
      }
    }
    valid = valid && ok;
  }
  const char* invalid = getenv("TEST_API_INVALID");
  if (invalid && atoi(invalid) == t) valid = 0;
  return SCR_Complete_output(valid) != SCR_SUCCESS;
}

/* Reads the file SCR routed `name` to as file k of rank r at timestep t. */
static int check_file(const char* name, int r, int k, int t, long size) {
  char file[SCR_MAX_FILENAME];
  if (SCR_Route_file(name, file) != SCR_SUCCESS) return 0;
  FILE* f = fopen(file, "r");
  if (!f) return 0;
  long len = payload_of(r, k, size);
  char* buf = malloc(len + 2);
  int ok;
  if (len < 0) {
    ok = fread(buf, 1, 1, f) == 0;
  } else {
    long long ts = -1;
    ok = fread(&ts, sizeof ts, 1, f) == 1 && ts == t;
    ok = ok && fread(buf, 1, len + 1, f) == (size_t)len;
    for (long i = 0; ok && i < len; i++) ok = buf[i] == (char)pattern(r, k, t, i);
  }
  free(buf);
  fclose(f);
  return ok;
}

static int read_ckpt(const char* dset, long size, int* t_out) {
  int t;
  if (sscanf(dset, "ckpt.%d", &t) != 1) return 0;
  *t_out = t;
#ifdef SCR_HAVE_RESTART_FILE_LIST
  int writers = 0, count = 0;
  if (!getenv("TEST_API_NO_FILE_LIST") && SCR_Restart_writers(&writers) == SCR_SUCCESS &&
      writers != ranks) {
    /* re-partitioned: file i of the checkpoint is read by rank i % ranks; TEST_API_READ_ALL=ms
     * has every rank read every file, rank r starting r * ms later (ranks of one node routing
     * the same files at about the same time) */
    if (SCR_Restart_file_count(&count) != SCR_SUCCESS) return 0;
    const char* read_all = getenv("TEST_API_READ_ALL");
    int ok = 1, mine = 0, first = read_all ? 0 : rank, step = read_all ? 1 : ranks;
    if (read_all) usleep(1000L * atol(read_all) * rank);
    for (int i = first; ok && i < count; i += step) {
      char name[SCR_MAX_FILENAME];
      int r = -1, k = 0;
      if (SCR_Restart_file_name(i, name) != SCR_SUCCESS) return 0;
      const char* base = strrchr(name, '/');
      base = base ? base + 1 : name;
      if (sscanf(base, "rank_%d.%d.ckpt", &r, &k) < 1) return 0;
      ok = check_file(name, r, k, t, size);
      mine++;
    }
    printf("test_api: rank %d read %d of the %d files %d ranks wrote\n", rank, mine, count, writers);
    return ok;
  }
#endif
  int ok = 1;
  for (int k = 0; ok && k < files_of(rank); k++) {
    char name[SCR_MAX_FILENAME];
    file_name(name, sizeof name, t, k);
    ok = check_file(name, rank, k, t, size);
  }
  return ok;
}

int main(int argc, char** argv) {
  /* each line out as it is printed: a test reads what a rank killed mid-run had said */
  setvbuf(stdout, NULL, _IOLBF, 0);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  vary = getenv("TEST_API_VARY") != NULL && atoi(getenv("TEST_API_VARY")) != 0;
  many = getenv("TEST_API_FILES") ? atoi(getenv("TEST_API_FILES")) : 0;
  pad = getenv("TEST_API_NAME_PAD") ? atoi(getenv("TEST_API_NAME_PAD")) : 0;
  long size = argc > 1 ? atol(argv[1]) : 1 << 20;
  int ckpts = argc > 2 ? atoi(argv[2]) : 3;
  int scr_on = SCR_Init() == SCR_SUCCESS;
  int start = 0, rc = 0;
  if (scr_on) {
    int have = 0;
    char dset[SCR_MAX_FILENAME];
    if (SCR_Have_restart(&have, dset) == SCR_SUCCESS && have) {
      SCR_Start_restart(dset);
      int t = 0, ok = read_ckpt(dset, size, &t);
      if (SCR_Complete_restart(ok) == SCR_SUCCESS) {
        start = t;
        if (rank == 0) printf("test_api: restarted from %s (timestep %d), data verified\n", dset, t);
      } else {
        if (rank == 0) printf("test_api: restart from %s failed verification\n", dset);
        rc = 1;
      }
    } else if (rank == 0) {
      printf("test_api: no checkpoint, starting from the beginning\n");
    }
  } else if (rank == 0) {
    printf("test_api: SCR disabled, running without it\n");
  }
  const char* until = getenv("TEST_API_UNTIL");
  int last = until ? atoi(until) : start + ckpts;
  for (int t = start + 1; scr_on && t <= last; t++) {
    int need = 0;
    SCR_Need_checkpoint(&need);
    double began = MPI_Wtime();
    int failed = need && write_ckpt(t, size);
    if (failed) { rc = 1; if (rank == 0) printf("test_api: checkpoint %d failed\n", t); }
    /* TEST_API_TIMES=1: how long each checkpoint kept the application from computing, and
     * when it returned (for checkpoints SCR completed) */
    if (need && !failed && rank == 0 && getenv("TEST_API_TIMES")) {
      struct timespec now;
      clock_gettime(CLOCK_REALTIME, &now);
      printf("test_api: checkpoint %d took %.3f s\n", t, MPI_Wtime() - began);
      /* when it returned, on the clock file times use (to compare with the prefix's files) */
      printf("test_api: checkpoint %d ended at %lld.%09ld\n", t, (long long)now.tv_sec, now.tv_nsec);
    }
    /* TEST_API_SHOULD_EXIT=1: ask SCR after each timestep whether to stop, as the user
     * guide's loop does, and stop when it says so */
    const char* ask = getenv("TEST_API_SHOULD_EXIT");
    if (ask && atoi(ask)) {
      int stop = 0;
      if (SCR_Should_exit(&stop) != SCR_SUCCESS) rc = 1;
      if (stop) {
        if (rank == 0) printf("test_api: SCR_Should_exit says stop after timestep %d\n", t);
        break;
      }
    }
    /* TEST_API_EXIT_FIRST=r: rank r gives up after the first checkpoint of a run that started
     * from the beginning, as a program that meets an error on one rank does: exit(1), without
     * MPI_Finalize (the other ranks go on to the next checkpoint and wait for it there) */
    const char* exit_first = getenv("TEST_API_EXIT_FIRST");
    if (exit_first && start == 0 && t == 1 && rank == atoi(exit_first)) {
      printf("test_api: rank %d exits without MPI_Finalize (TEST_API_EXIT_FIRST)\n", rank);
      exit(1);
    }
    /* TEST_API_SLEEP_MS=n: compute for n ms per timestep (so a test can kill a node mid-run) */
    const char* sleep_ms = getenv("TEST_API_SLEEP_MS");
    if (sleep_ms) usleep(1000 * atol(sleep_ms));
  }
  /* TEST_API_NO_FINALIZE=1 ends as a job killed after its last checkpoint would: without
   * SCR_Finalize, so nothing more is flushed. TEST_API_FAIL_FIRST=1 does that, with exit
   * code 3, only when the run started from the beginning (a first run that fails). */
  const char* no_finalize = getenv("TEST_API_NO_FINALIZE");
  const char* fail_first = getenv("TEST_API_FAIL_FIRST");
  if (scr_on && fail_first && atoi(fail_first) && start == 0) {
    if (rank == 0) printf("test_api: failing on purpose (TEST_API_FAIL_FIRST)\n");
    MPI_Finalize();
    return 3;
  }
  if (scr_on && !(no_finalize && atoi(no_finalize))) SCR_Finalize();
  if (rank == 0 && rc == 0) printf("test_api: done\n");
  MPI_Finalize();
  return rc;
}
