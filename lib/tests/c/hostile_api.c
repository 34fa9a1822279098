/* Calls SCR's C API as careless or hostile code would: NULL where an output is required, a
 * second SCR_Init, dataset names that would forge index lines or leave their directory.
 * Each must fail (SCR_FAILURE with one line on stderr) and leave SCR working: a checkpoint
 * afterwards must succeed. Prints "hostile_api: <case> rc=<rc>" per case, then "done". */
#include <mpi.h>
#include <stdio.h>
#include "scr.h"

static int rank;

static void report(const char* what, int rc) {
  if (rank == 0) printf("hostile_api: %s rc=%d\n", what, rc);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (SCR_Init() != SCR_SUCCESS) return 1;
  char buf[SCR_MAX_FILENAME];
  report("second init", SCR_Init());
  report("need_checkpoint null", SCR_Need_checkpoint(NULL));
  report("have_restart null", SCR_Have_restart(NULL, buf));
  int flag = -1;
  report("have_restart null name", SCR_Have_restart(&flag, NULL));
  report("should_exit null", SCR_Should_exit(NULL));
  report("forged name", SCR_Start_output("evil\nDSET VALID FLUSHED NAME", SCR_FLAG_CHECKPOINT));
  report("dotdot name", SCR_Start_output("..", SCR_FLAG_CHECKPOINT));
  /* names of SCR's own state: a dataset named like the current link, files routed onto
   * the index, the halt file, the user configuration, the link */
  report("dataset scr.current", SCR_Start_output("scr.current", SCR_FLAG_CHECKPOINT));
  report("dataset .scr", SCR_Start_output(".scr", SCR_FLAG_CHECKPOINT));
  /* a real checkpoint still works */
  int rc = SCR_Start_output("good", SCR_FLAG_CHECKPOINT);
  report("good start", rc);
  report("route null out", SCR_Route_file("good/f", NULL));
  report("route .scr/index.scr", SCR_Route_file(".scr/index.scr", buf));
  report("route .scr/halt.scr", SCR_Route_file(".scr/halt.scr", buf));
  report("route .scrconf", SCR_Route_file(".scrconf", buf));
  report("route scr.current", SCR_Route_file("scr.current", buf));
  report("route scr.current/x", SCR_Route_file("scr.current/x", buf));
  if (SCR_Route_file("good/f", buf) == SCR_SUCCESS) {
    FILE* f = fopen(buf, "w");
    if (f) { fprintf(f, "%d\n", rank); fclose(f); }
  }
  report("good complete", SCR_Complete_output(1));
  report("finalize", SCR_Finalize());
  if (rank == 0) printf("hostile_api: done\n");
  MPI_Finalize();
  return 0;
}
