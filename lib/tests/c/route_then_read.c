/* A restart that routes its files, then waits before it opens them: every rank routes the
 * files of the restart's list it reads (file i by rank i % ranks), rank 0 then creates the
 * file ROUTED names and waits (at most two minutes) for the file GO names, and only then
 * does each rank route each file again and open what SCR_Route_file returned, printing its
 * first line. A test changes the prefix meanwhile. Usage: route_then_read ROUTED GO */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "scr.h"

#define MOST 64

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  MPI_Init(&argc, &argv);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (argc != 3) {
    if (rank == 0) fprintf(stderr, "usage: route_then_read ROUTED GO\n");
    MPI_Finalize();
    return 2;
  }
  if (SCR_Init() != SCR_SUCCESS) {
    if (rank == 0) printf("route_then_read: SCR_Init failed\n");
    MPI_Finalize();
    return 0;
  }
  int have = 0, count = 0, routed = 0, ok = 1;
  char dset[SCR_MAX_FILENAME];
  static char names[MOST][SCR_MAX_FILENAME], paths[MOST][SCR_MAX_FILENAME];
  if (SCR_Have_restart(&have, dset) != SCR_SUCCESS || !have) {
    if (rank == 0) printf("route_then_read: no checkpoint to restart from\n");
    SCR_Finalize();
    MPI_Finalize();
    return 0;
  }
  SCR_Start_restart(dset);
  if (SCR_Restart_file_count(&count) != SCR_SUCCESS) ok = 0;
  for (int i = rank; ok && i < count && routed < MOST; i += ranks) {
    if (SCR_Restart_file_name(i, names[routed]) != SCR_SUCCESS ||
        SCR_Route_file(names[routed], paths[routed]) != SCR_SUCCESS) {
      printf("route_then_read: rank %d could not route file %d\n", rank, i);
      ok = 0;
    } else {
      routed++;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    FILE* mark = fopen(argv[1], "w");
    if (mark) fclose(mark);
    for (int waited = 0; access(argv[2], F_OK) != 0 && waited < 1200; waited++) usleep(100000);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < routed; i++) {
    char line[128] = "";
    if (SCR_Route_file(names[i], paths[i]) != SCR_SUCCESS) {
      printf("route_then_read: rank %d could not route %s again\n", rank, names[i]);
      ok = 0;
      continue;
    }
    FILE* f = fopen(paths[i], "r");
    if (f && fgets(line, sizeof line, f)) {
      line[strcspn(line, "\n")] = '\0';
      printf("route_then_read: rank %d read %s: %s\n", rank, paths[i], line);
    } else {
      printf("route_then_read: rank %d could not read %s\n", rank, paths[i]);
      ok = 0;
    }
    if (f) fclose(f);
  }
  SCR_Complete_restart(ok);
  SCR_Finalize();
  MPI_Finalize();
  return 0;
}
