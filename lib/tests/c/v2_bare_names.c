/* A program written against SCR v2.0's API as its users write them: checkpoint files under
 * ckpt.<t>/, and on restart each file routed by its bare file name (v2.0 keeps cache files
 * flat and routes by name). Usage: v2_bare_names CKPTS [dup]; with "dup" every rank writes
 * two files of the same name in different directories, and routing the bare name on restart
 * must fail. Prints "restarted from <name> at step <t>" once verified. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "scr.h"

static int rank;

static int write_file(const char* name, int t) {
  char file[SCR_MAX_FILENAME];
  if (SCR_Route_file(name, file) != SCR_SUCCESS) return 0;
  FILE* f = fopen(file, "w");
  if (!f) return 0;
  int ok = fprintf(f, "rank %d step %d\n", rank, t) > 0;
  return fclose(f) == 0 && ok;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int ckpts = argc > 1 ? atoi(argv[1]) : 2;
  int dup = argc > 2 && strcmp(argv[2], "dup") == 0;
  if (SCR_Init() != SCR_SUCCESS) { printf("v2_bare_names: SCR_Init failed\n"); return 1; }

  /* outside any output or restart a name comes back unchanged (SCR v2.0) */
  char plain[SCR_MAX_FILENAME];
  if (SCR_Route_file("notes/plain.txt", plain) != SCR_SUCCESS || strcmp(plain, "notes/plain.txt") != 0) {
    printf("v2_bare_names: Route_file outside a phase changed the name\n");
    return 1;
  }

  int have = 0, step = 0;
  char dset[SCR_MAX_FILENAME];
  SCR_Have_restart(&have, dset);
  if (have) {
    SCR_Start_restart(dset);
    char name[64], file[SCR_MAX_FILENAME];
    snprintf(name, sizeof name, "rank_%d.ckpt", rank);
    int valid = SCR_Route_file(name, file) == SCR_SUCCESS;
    if (valid) {
      FILE* f = fopen(file, "r");
      int r = -1;
      valid = f && fscanf(f, "rank %d step %d", &r, &step) == 2 && r == rank;
      if (f) fclose(f);
    }
    int all = 0;
    MPI_Allreduce(&valid, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (SCR_Complete_restart(valid) == SCR_SUCCESS && all) {
      if (rank == 0) printf("v2_bare_names: restarted from %s at step %d\n", dset, step);
    } else {
      if (rank == 0) printf("v2_bare_names: restart from %s failed\n", dset);
      step = 0;
    }
  } else if (rank == 0) {
    printf("v2_bare_names: no checkpoint\n");
  }

  for (int t = step + 1; t <= step + ckpts; t++) {
    char dname[64], name[128];
    snprintf(dname, sizeof dname, "ckpt.%d", t);
    SCR_Start_output(dname, SCR_FLAG_CHECKPOINT);
    int valid;
    if (dup) {
      snprintf(name, sizeof name, "ckpt.%d/a/rank_%d.ckpt", t, rank);
      valid = write_file(name, t);
      snprintf(name, sizeof name, "ckpt.%d/b/rank_%d.ckpt", t, rank);
      valid = write_file(name, t) && valid;
    } else {
      snprintf(name, sizeof name, "ckpt.%d/rank_%d.ckpt", t, rank);
      valid = write_file(name, t);
    }
    SCR_Complete_output(valid);
  }
  SCR_Finalize();
  MPI_Finalize();
  return 0;
}
