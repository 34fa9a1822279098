/* A plain MPI program, no SCR: each rank writes ckpt.<T>/rank_<r>.ckpt in the working
 * directory the way examples/c/test_api.c lays out a checkpoint (an 8-byte timestep, then
 * SIZE bytes that say which rank, file, timestep and offset they are), fsynced. What a
 * simulation wrote before SCR was turned on. Usage: plain_checkpoint SIZE T */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned char pattern(int r, int k, int t, long i) {
  uint64_t w = ((uint64_t)t << 56) ^ ((uint64_t)r << 40) ^ ((uint64_t)k << 32) ^ (uint64_t)(i / 8);
  return (unsigned char)(w >> (8 * (i % 8)));
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long size = argc > 1 ? atol(argv[1]) : 1000;
  int t = argc > 2 ? atoi(argv[2]) : 1;
  char dir[64], name[128];
  snprintf(dir, sizeof dir, "ckpt.%d", t);
  mkdir(dir, 0755);
  MPI_Barrier(MPI_COMM_WORLD);
  snprintf(name, sizeof name, "%s/rank_%d.ckpt", dir, rank);
  FILE* f = fopen(name, "w");
  int ok = f != NULL;
  if (ok) {
    long long ts = t;
    ok = fwrite(&ts, sizeof ts, 1, f) == 1;
    for (long i = 0; ok && i < size; i++) ok = fputc(pattern(rank, 0, t, i), f) != EOF;
    ok = fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
    ok = fclose(f) == 0 && ok;
  }
  if (!ok) fprintf(stderr, "plain_checkpoint: rank %d could not write %s\n", rank, name);
  MPI_Finalize();
  return ok ? 0 : 1;
}
