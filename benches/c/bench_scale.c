/* How each phase of SCR grows with the job: rank 0 prints, per phase, the wall seconds
 * (every rank done), rank 0's CPU seconds, the bytes MPI delivered to rank 0 (with the
 * mpi_bytes.so shim preloaded, else -1) and rank 0's peak resident memory after it.
 *
 * Usage: bench_scale write|restart|fetch SIZE_BYTES
 *   write    SCR_Init, SCR_Need_checkpoint, then four checkpoints of SIZE_BYTES per rank, whose
 *            descriptors the configuration makes SINGLE, XOR, SINGLE flushed, XOR (phases
 *            complete_single, complete_xor, complete_flush, complete_xor)
 *   restart  SCR_Init after a node's cache was lost (the rebuild), then the restart itself
 *            (SCR_Have_restart, SCR_Start_restart, reading and checking the file, Complete)
 *   fetch    SCR_Init with every cache gone, and SCR_Have_restart, which fetches
 * Lines: "phase NAME wall_s CPU_s BYTES MAXRSS_KIB". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "scr.h"
#include "bench_common.h"

static int rank;
static double wall0, cpu0;
static long long bytes0;
static long long (*received)(void);

static double cpu_now(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static long long bytes_now(void) { return received ? received() : -1; }

static void start(void) {
  MPI_Barrier(MPI_COMM_WORLD);
  wall0 = MPI_Wtime();
  cpu0 = cpu_now();
  bytes0 = bytes_now();
}

static void stop(const char* name) {
  double cpu = cpu_now() - cpu0;
  long long b = bytes_now();
  MPI_Barrier(MPI_COMM_WORLD);
  double wall = MPI_Wtime() - wall0;
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  if (rank == 0)
    printf("phase %s %.4f %.4f %lld %ld\n", name, wall, cpu, b < 0 ? -1 : b - bytes0, u.ru_maxrss);
  fflush(stdout);
}

static void fill(char* buf, size_t n, int ckpt) {
  for (size_t i = 0; i < n; i++) buf[i] = (char)(i * 7 + rank * 13 + ckpt);
}


static void fail(const char* what) {
  fprintf(stderr, "bench_scale: rank %d: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 3);
}

static void checkpoint(int c, const char* phase, char* buf, size_t n) {
  char name[SCR_MAX_FILENAME], path[SCR_MAX_FILENAME];
  if (SCR_Start_checkpoint() != SCR_SUCCESS) fail("SCR_Start_checkpoint");
  snprintf(name, sizeof name, "rank_%d.ckpt", rank);
  fill(buf, n, c);
  int ok = SCR_Route_file(name, path) == SCR_SUCCESS && write_file(path, buf, n, 0);
  start();
  if (SCR_Complete_checkpoint(ok) != SCR_SUCCESS || !ok) fail("checkpoint");
  stop(phase);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 3) fail("usage: bench_scale write|restart|fetch SIZE_BYTES");
  received = (long long (*)(void))dlsym(RTLD_DEFAULT, "bench_mpi_bytes_received");
  size_t n = (size_t)atoll(argv[2]);
  char* buf = malloc(n ? n : 1);
  const char* mode = argv[1];
  start();
  if (SCR_Init() != SCR_SUCCESS) fail("SCR_Init");
  stop("init");
  if (strcmp(mode, "write") == 0) {
    int flag = 0;
    start();
    if (SCR_Need_checkpoint(&flag) != SCR_SUCCESS) fail("SCR_Need_checkpoint");
    stop("need_checkpoint");
    checkpoint(1, "complete_single", buf, n);
    checkpoint(2, "complete_xor", buf, n);
    checkpoint(3, "complete_flush", buf, n);
    checkpoint(4, "complete_xor", buf, n);
  } else {
    int have = 0;
    start();
    if (SCR_Have_restart(&have, NULL) != SCR_SUCCESS) fail("SCR_Have_restart");
    stop(strcmp(mode, "fetch") == 0 ? "fetch" : "have_restart");
    if (!have) fail("no checkpoint to restart from");
    char name[SCR_MAX_FILENAME], path[SCR_MAX_FILENAME];
    start();
    if (SCR_Start_restart(name) != SCR_SUCCESS) fail("SCR_Start_restart");
    char started[SCR_MAX_FILENAME];
    snprintf(started, sizeof started, "%s", name);
    snprintf(name, sizeof name, "rank_%d.ckpt", rank);
    int ok = SCR_Route_file(name, path) == SCR_SUCCESS;
    /* the checkpoint restarted from: the number its name ends with */
    const char* digits = started + strlen(started);
    while (digits > started && digits[-1] >= '0' && digits[-1] <= '9') digits--;
    int c = atoi(digits);
    if (c < 1 || c > 4) fail("the restart's name does not end with its checkpoint number");
    char* expect = malloc(n ? n : 1);
    fill(expect, n, c);
    FILE* f = ok ? fopen(path, "rb") : NULL;
    ok = f && fread(buf, 1, n, f) == n && memcmp(buf, expect, n) == 0;
    if (f) fclose(f);
    if (SCR_Complete_restart(ok) != SCR_SUCCESS || !ok) fail("the restarted file is not what was written");
    stop("restart");
    free(expect);
  }
  start();
  SCR_Finalize();
  stop("finalize");
  free(buf);
  MPI_Finalize();
  return 0;
}
