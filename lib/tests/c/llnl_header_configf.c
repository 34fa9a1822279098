/* A program as one built against SCR v3.1's own scr.h: SCR_Config and SCR_Configf are
 * prototypes only (as LLNL's header declares them), so both must come from libscr. Sets
 * SCR_FLUSH with an integer, SCR_HALT_SECONDS with a double (a variadic argument passed in
 * a floating-point register) and SCR_CLUSTER_NAME with a string, and prints what SCR_Config
 * then answers for each: "configf: NAME=VALUE". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

const char* SCR_Config(const char* config);
const char* SCR_Configf(const char* format, ...);
int SCR_Init(void);
int SCR_Finalize(void);

static void show(const char* name) {
  char* value = (char*) SCR_Config(name);
  printf("configf: %s=%s\n", name, value ? value : "(null)");
  free(value);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int set = SCR_Configf("SCR_FLUSH=%d", 7) == NULL;
  set = set && SCR_Configf("SCR_HALT_SECONDS=%.0f", 30.0) == NULL;
  set = set && SCR_Configf("%s=%s-%d", "SCR_CLUSTER_NAME", "run", 12) == NULL;
  SCR_Init();
  if (rank == 0) {
    printf("configf: set=%d\n", set);
    show("SCR_FLUSH");
    show("SCR_HALT_SECONDS");
    show("SCR_CLUSTER_NAME");
  }
  SCR_Finalize();
  MPI_Finalize();
  return 0;
}
