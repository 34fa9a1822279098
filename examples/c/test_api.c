/* Example SCR application (C): restarts from the newest checkpoint if there is one,
 * verifies every byte, then writes CKPTS checkpoints of SIZE bytes per rank.
 * Rank r's file in timestep t holds an 8-byte timestep header, then byte i = (r + i + t) % 256.
 * Usage: test_api [SIZE [CKPTS]]; exits 1 on any mismatch. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "scr.h"

static int rank, ranks;

/* TEST_API_INVALID=t marks checkpoint t invalid on every rank (to test failure handling). */
static int write_ckpt(int t, long size) {
  char name[SCR_MAX_FILENAME], dset[64], file[SCR_MAX_FILENAME];
  snprintf(dset, sizeof dset, "ckpt.%d", t);
  if (SCR_Start_output(dset, SCR_FLAG_CHECKPOINT) != SCR_SUCCESS) return 1;
  snprintf(name, sizeof name, "ckpt.%d/rank_%d.ckpt", t, rank);
  int valid = 0;
  if (SCR_Route_file(name, file) == SCR_SUCCESS) {
    FILE* f = fopen(file, "w");
    if (f) {
      long long ts = t;
      valid = fwrite(&ts, sizeof ts, 1, f) == 1;
      char* buf = malloc(size);
      for (long i = 0; i < size; i++) buf[i] = (char)((rank + i + t) % 256);
      valid = valid && fwrite(buf, 1, size, f) == (size_t)size;
      free(buf);
      valid = (fclose(f) == 0) && valid;
    }
  }
  const char* invalid = getenv("TEST_API_INVALID");
  if (invalid && atoi(invalid) == t) valid = 0;
  return SCR_Complete_output(valid) != SCR_SUCCESS;
}

static int read_ckpt(const char* dset, long size, int* t_out) {
  int t;
  if (sscanf(dset, "ckpt.%d", &t) != 1) return 0;
  char name[SCR_MAX_FILENAME], file[SCR_MAX_FILENAME];
  snprintf(name, sizeof name, "ckpt.%d/rank_%d.ckpt", t, rank);
  if (SCR_Route_file(name, file) != SCR_SUCCESS) return 0;
  FILE* f = fopen(file, "r");
  if (!f) return 0;
  long long ts = -1;
  int ok = fread(&ts, sizeof ts, 1, f) == 1 && ts == t;
  char* buf = malloc(size + 1);
  ok = ok && fread(buf, 1, size + 1, f) == (size_t)size;
  for (long i = 0; ok && i < size; i++) ok = buf[i] == (char)((rank + i + t) % 256);
  free(buf);
  fclose(f);
  *t_out = t;
  return ok;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
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
  for (int t = start + 1; scr_on && t <= start + ckpts; t++) {
    int need = 0;
    SCR_Need_checkpoint(&need);
    if (need && write_ckpt(t, size)) { rc = 1; if (rank == 0) printf("test_api: checkpoint %d failed\n", t); }
  }
  if (scr_on) SCR_Finalize();
  if (rank == 0 && rc == 0) printf("test_api: done\n");
  MPI_Finalize();
  return rc;
}
