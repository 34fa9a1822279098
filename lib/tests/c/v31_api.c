/* A program written against SCR v3.1's API: SCR_Config and SCR_Configf before SCR_Init
 * (set, unset, query, a descriptor line, a refused value), queries after it; then
 *   v31_api first   writes ckpt.1, ckpt.2, ckpt.3 (each flushed)
 *   v31_api second  chooses ckpt.2 with SCR_Current, restarts from it, drops ckpt.1,
 *                   deletes ckpt.3, and writes ckpt.3 anew
 * Every expectation that fails prints "v31: FAILED: ..." and exits 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "scr.h"

static int rank, failures;

static void expect(int ok, const char* what) {
  if (!ok) { printf("v31: FAILED: rank %d: %s\n", rank, what); failures++; }
}

/* the query's answer equals want (NULL: no value) */
static void query_is(const char* key, const char* want) {
  char* got = (char*) SCR_Config(key);
  int ok = want ? (got && strcmp(got, want) == 0) : got == NULL;
  if (!ok) printf("v31: FAILED: rank %d: SCR_Config(\"%s\") gave %s, want %s\n", rank, key, got ? got : "NULL", want ? want : "NULL");
  failures += !ok;
  free(got);
}

static void write_ckpt(int t) {
  char dset[32], name[64], file[SCR_MAX_FILENAME];
  snprintf(dset, sizeof dset, "ckpt.%d", t);
  expect(SCR_Start_output(dset, SCR_FLAG_CHECKPOINT) == SCR_SUCCESS, "Start_output");
  snprintf(name, sizeof name, "ckpt.%d/rank_%d.dat", t, rank);
  int valid = SCR_Route_file(name, file) == SCR_SUCCESS;
  FILE* f = valid ? fopen(file, "w") : NULL;
  valid = f && fprintf(f, "%d %d\n", rank, t) > 0;
  if (f) valid = fclose(f) == 0 && valid;
  expect(SCR_Complete_output(valid) == SCR_SUCCESS, "Complete_output");
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int first = argc > 1 && strcmp(argv[1], "first") == 0;

  if (first) {
    expect(SCR_Config("SCR_FLUSH=1") == NULL, "a set returns NULL");
    query_is("SCR_FLUSH", "1");
    expect(SCR_Configf("SCR_FLUSH_WIDTH=%d", 2) == NULL, "SCR_Configf set");
    query_is("scr_flush_width", "2");
    char* before = (char*) SCR_Config("SCR_CHECKPOINT_INTERVAL");
    SCR_Config("SCR_CHECKPOINT_INTERVAL=5");
    query_is("SCR_CHECKPOINT_INTERVAL", "5");
    SCR_Config("SCR_CHECKPOINT_INTERVAL=");
    query_is("SCR_CHECKPOINT_INTERVAL", before); /* back to what it was */
    free(before);
    SCR_Config("CKPT=0 INTERVAL=1 TYPE=PARTNER");
    SCR_Config("CKPT=0 TYPE=SINGLE");
    query_is("CKPT=0 TYPE", "SINGLE");
    query_is("CKPT=0 INTERVAL", "1");
    expect(SCR_Config("SCR_FLUSH=often") == NULL, "a bad value is refused");
    query_is("SCR_FLUSH", "1");
    query_is("SCR_NO_SUCH_PARAMETER", NULL);
  } else {
    /* what the first run set configured the first run only: each run sets its own (a
     * job no drain follows flushes each checkpoint where nothing chose otherwise) */
    query_is("SCR_FLUSH", "1");
    query_is("SCR_FLUSH_ASYNC", "1");
    SCR_Config("SCR_FLUSH=1");
  }
  expect(SCR_Init() == SCR_SUCCESS, "SCR_Init");
  /* after SCR_Init: queries only */
  query_is("SCR_FLUSH", "1");
  expect(SCR_Config("SCR_FLUSH=2") == NULL, "a set after SCR_Init returns NULL");
  query_is("SCR_FLUSH", "1");

  if (first) {
    for (int t = 1; t <= 3; t++) write_ckpt(t);
  } else {
    expect(SCR_Current("ckpt.2") == SCR_SUCCESS, "SCR_Current(ckpt.2)");
    int have = 0;
    char name[SCR_MAX_FILENAME] = "";
    SCR_Have_restart(&have, name);
    expect(have && strcmp(name, "ckpt.2") == 0, "the restart is ckpt.2");
    if (have) {
      char dset[SCR_MAX_FILENAME], file[SCR_MAX_FILENAME], mine[64];
      SCR_Start_restart(dset);
      snprintf(mine, sizeof mine, "ckpt.2/rank_%d.dat", rank);
      int r = -1, t = -1, valid = SCR_Route_file(mine, file) == SCR_SUCCESS;
      FILE* f = valid ? fopen(file, "r") : NULL;
      valid = f && fscanf(f, "%d %d", &r, &t) == 2 && r == rank && t == 2;
      if (f) fclose(f);
      expect(SCR_Complete_restart(valid) == SCR_SUCCESS && valid, "restart from ckpt.2 verified");
      if (rank == 0 && valid) printf("v31: restarted from %s\n", dset);
    }
    expect(SCR_Drop("ckpt.1") == SCR_SUCCESS, "SCR_Drop(ckpt.1)");
    expect(SCR_Delete("ckpt.3") == SCR_SUCCESS, "SCR_Delete(ckpt.3)");
    expect(SCR_Drop("no-such-dataset") == SCR_SUCCESS, "SCR_Drop of an unknown name");
    write_ckpt(3);
  }
  expect(SCR_Finalize() == SCR_SUCCESS, "SCR_Finalize");
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && all == 0) printf("v31: %s run done\n", first ? "first" : "second");
  MPI_Finalize();
  return all ? 1 : 0;
}
