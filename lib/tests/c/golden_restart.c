/* Restarts from a prefix written by real SCR v2.0.0 running its test_api (4 ranks):
 * rank r's file holds "%06d\0" (the timestep) and then 65536 + r bytes, byte i = (r + i) % 256.
 * Prints "golden: restarted from <name>" on rank 0; exits 1 if anything differs. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "scr.h"

int main(int argc, char** argv) {
  int rank, ok = 0, have = 0;
  char dset[SCR_MAX_FILENAME], name[SCR_MAX_FILENAME], file[SCR_MAX_FILENAME];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (SCR_Init() == SCR_SUCCESS && SCR_Have_restart(&have, dset) == SCR_SUCCESS && have &&
      SCR_Start_restart(dset) == SCR_SUCCESS) {
    snprintf(name, sizeof name, "%s/rank_%d.ckpt", dset, rank);
    if (SCR_Route_file(name, file) == SCR_SUCCESS) {
      FILE* f = fopen(file, "r");
      long n = 65536 + rank;
      char* buf = malloc(n + 8);
      if (f && fread(buf, 1, n + 8, f) == (size_t)(n + 7) && strcmp(buf, "000003") == 0) {
        ok = 1;
        for (long i = 0; i < n; i++) ok = ok && buf[7 + i] == (char)((rank + i) % 256);
      }
      if (f) fclose(f);
      free(buf);
    }
    ok = SCR_Complete_restart(ok) == SCR_SUCCESS;
    if (rank == 0 && ok) printf("golden: restarted from %s\n", dset);
    SCR_Finalize();
  }
  MPI_Finalize();
  return ok ? 0 : 1;
}
