/* Calls SCR the way a program with a missing SCR_Init does, or with SCR disabled:
 *   need      SCR_Need_checkpoint without SCR_Init (SCR stops the job)
 *   route     SCR_Route_file without SCR_Init (the name comes back unchanged)
 *   disabled  SCR_Init, then SCR_Should_exit (run with SCR_ENABLE=0) */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "scr.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char* what = argc > 1 ? argv[1] : "need";
  if (strcmp(what, "need") == 0) {
    int flag = 0;
    SCR_Need_checkpoint(&flag);
    if (rank == 0) printf("before_init: went on\n");
  } else if (strcmp(what, "route") == 0) {
    char file[SCR_MAX_FILENAME];
    int rc = SCR_Route_file("plain.dat", file);
    if (rank == 0 && rc == SCR_SUCCESS) printf("before_init: routed plain.dat to %s\n", file);
  } else {
    SCR_Init();
    int flag = 42;
    int rc = SCR_Should_exit(&flag);
    if (rank == 0) printf("before_init: disabled, flag %d, rc %d\n", flag, rc);
    SCR_Finalize();
  }
  MPI_Finalize();
  return 0;
}
