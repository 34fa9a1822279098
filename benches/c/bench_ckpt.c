/* Checkpoint cost benchmark: each rank writes SIZE MiB per checkpoint (write + fsync +
 * close), either through SCR or straight to a directory. Rank 0 prints the median seconds
 * per checkpoint over COUNT timed checkpoints (after one warm-up).
 * Usage: bench_ckpt MODE SIZE_MIB COUNT [RAW_DIR]   MODE = scr | raw
 * For SCR, rank 0 also prints the median seconds of SCR_Complete_checkpoint alone (until every
 * rank returned). The program uses only SCR v1.x/v2.0 calls, so the same binary runs with
 * any SCR library found through LD_LIBRARY_PATH (ours or LLNL's).
 * Rank 0 also prints SCR_Init's seconds (which include any rebuild of a lost node's cache).
 * BENCH_PHASES=1 makes rank 0 print the time of Start, write and Complete of each SCR checkpoint;
 * BENCH_COMPUTE_MS=n sleeps n ms between checkpoints (untimed). */
#include <mpi.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "scr.h"
#include "bench_common.h"

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}


int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 4) { if (rank == 0) fprintf(stderr, "usage: bench_ckpt scr|raw SIZE_MIB COUNT [RAW_DIR]\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
  int scr = strcmp(argv[1], "scr") == 0;
  size_t n = (size_t)atol(argv[2]) << 20;
  int count = atoi(argv[3]);
  char* buf = malloc(n);
  for (size_t i = 0; i < n; i++) buf[i] = (char)(i * 7 + rank);
  MPI_Barrier(MPI_COMM_WORLD);
  double init0 = MPI_Wtime();
  if (scr && SCR_Init() != SCR_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 3);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && scr) printf("init_seconds %.4f\n", MPI_Wtime() - init0);
  double* t = malloc(sizeof(double) * (count + 1));
  double* tc = malloc(sizeof(double) * (count + 1));
  for (int c = 0; c <= count; c++) {
    char name[SCR_MAX_FILENAME], path[SCR_MAX_FILENAME];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int ok;
    if (scr) {
      SCR_Start_checkpoint();
      double t1 = MPI_Wtime();
      snprintf(name, sizeof name, "bench.%d/rank_%d.ckpt", c, rank);
      ok = SCR_Route_file(name, path) == SCR_SUCCESS && write_file(path, buf, n, 1);
      /* every rank has written before Complete is timed, so it does not count the time
       * the slowest writer takes (ranks share the cores) */
      MPI_Barrier(MPI_COMM_WORLD);
      double t2 = MPI_Wtime();
      ok = SCR_Complete_checkpoint(ok) == SCR_SUCCESS && ok;
      MPI_Barrier(MPI_COMM_WORLD);
      tc[c] = MPI_Wtime() - t2;
      if (rank == 0 && getenv("BENCH_PHASES"))
        fprintf(stderr, "start %.4f write %.4f complete %.4f\n", t1 - t0, t2 - t1, MPI_Wtime() - t2);
    } else {
      snprintf(path, sizeof path, "%s/rank_%d.%d.ckpt", argv[4], rank, c);
      ok = write_file(path, buf, n, 1);
      if (c > 0) { snprintf(name, sizeof name, "%s/rank_%d.%d.ckpt", argv[4], rank, c - 1); unlink(name); }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t[c] = MPI_Wtime() - t0;
    if (!ok) MPI_Abort(MPI_COMM_WORLD, 4);
    /* BENCH_COMPUTE_MS=n: the application computes n ms between checkpoints (not timed),
     * time an asynchronous flush can use */
    if (getenv("BENCH_COMPUTE_MS")) usleep(1000 * atol(getenv("BENCH_COMPUTE_MS")));
  }
  qsort(t + 1, count, sizeof(double), cmp);
  if (rank == 0) printf("median_seconds %.4f\n", t[1 + count / 2]);
  if (rank == 0 && scr) {
    qsort(tc + 1, count, sizeof(double), cmp);
    printf("complete_median_seconds %.4f\n", tc[1 + count / 2]);
  }
  if (scr) SCR_Finalize();
  free(buf);
  free(t);
  free(tc);
  MPI_Finalize();
  return 0;
}
