/* README's restart loop over the file list, as a program: the test puts README's own snippet
 * where README_SNIPPET is, so what README shows is what runs. The checkpoint is test_api's
 * (every rank writes ckpt.T/rank_R.ckpt: an 8-byte timestep, then SIZE bytes that say which
 * rank, timestep and offset they belong to); read_state checks every byte of a file against
 * the writer its name says. Prints how many files each rank read and, on rank 0, how many
 * all ranks read, and whether every byte was right. Usage: readme_file_list SIZE */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "scr.h"

static int rank, ranks, timestep, files_read;
static long size;

static unsigned char pattern(int r, int k, int t, long i) {
  uint64_t w = ((uint64_t)t << 56) ^ ((uint64_t)r << 40) ^ ((uint64_t)k << 32) ^ (uint64_t)(i / 8);
  return (unsigned char)(w >> (8 * (i % 8)));
}

/* the application's own reading: `name` says whose file it is, `path` is where to read it */
static int read_state(const char* name, const char* path) {
  const char* base = strrchr(name, '/');
  int r = -1;
  if (sscanf(base ? base + 1 : name, "rank_%d.ckpt", &r) != 1) return 0;
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  long long ts = -1;
  char* buf = malloc(size + 1);
  int ok = fread(&ts, sizeof ts, 1, f) == 1 && ts == timestep;
  ok = ok && fread(buf, 1, size + 1, f) == (size_t)size;
  for (long i = 0; ok && i < size; i++) ok = buf[i] == (char)pattern(r, 0, timestep, i);
  free(buf);
  fclose(f);
  files_read++;
  return ok;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  size = argc > 1 ? atol(argv[1]) : 6000;
  int have = 0, rc = 1;
  char dset[SCR_MAX_FILENAME];
  if (SCR_Init() != SCR_SUCCESS) return 1;
  if (SCR_Have_restart(&have, dset) == SCR_SUCCESS && have &&
      SCR_Start_restart(dset) == SCR_SUCCESS && sscanf(dset, "ckpt.%d", &timestep) == 1) {
    /* README_SNIPPET */
    printf("readme: rank %d read %d files\n", rank, files_read);
    int valid = SCR_Complete_restart(ok) == SCR_SUCCESS, all = 0;
    MPI_Reduce(&files_read, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("readme: %s: %d files read in all, %s\n", dset, all, valid ? "data verified" : "data NOT verified");
    rc = !valid;
  } else if (rank == 0) {
    printf("readme: no checkpoint\n");
  }
  SCR_Finalize();
  MPI_Finalize();
  return rc;
}
