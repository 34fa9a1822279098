/* Drives SCR's C API one step per argument, for the tests that check what SCR v3.1's user
 * guide promises (lib/tests/guide_*.rs). Every rank runs every step in order; rank 0 prints
 * what each collective step returned, after checking that every rank got the same answer:
 *
 *   guide: <step> -> <result>            (rank 0; "rc=mixed" when ranks disagree)
 *   guide: rank <r>: <step> -> <result>  (each rank's own routing)
 *
 * The data says where it belongs, as test_api's does: rank r's file of timestep t holds the
 * 8-byte t, then SIZE bytes of pattern(r, 0, t) (lib/tests/common/mod.rs check_file reads
 * it); a shared file holds each rank's SIZE bytes of pattern(r, 0, t) at offset r * SIZE.
 * So what a restart read is checked by the program itself, never taken from SCR.
 *
 * Steps ("%r" in a NAME is the rank; a dataset NAME "-" is NULL, "@N" N letters x):
 *   size=N              bytes of data per file (default 1000)
 *   config=LINE         SCR_Config(LINE): prints NULL or the string returned
 *   configf=KEY:VALUE   SCR_Configf("%s=%s", KEY, VALUE)
 *   init | finalize     SCR_Init, SCR_Finalize
 *   need | shouldexit   SCR_Need_checkpoint, SCR_Should_exit: the flag and the return code
 *   start=NAME:FLAGS    SCR_Start_output (FLAGS: letters c and o, or n for SCR_FLAG_NONE; the
 *                       letters after a 1 apply on rank 1 only)
 *   route=NAME          SCR_Route_file: each rank prints the code and the path
 *   write=NAME:T        routes NAME and writes timestep T's data there (each rank prints the path)
 *   shared=NAME:T       routes NAME and writes this rank's block of a file all ranks share
 *   complete[=V]        SCR_Complete_output(V, else whether every write of this rank worked)
 *   ckpt=NAME:T[:FLAGS] start, write NAME/rank_%r.ckpt, complete (FLAGS default c)
 *   have[=null]         SCR_Have_restart: the flag and the name (=null: a NULL name)
 *   startrestart[=null] SCR_Start_restart: the code and the name
 *   read=NAME:T         routes NAME and checks timestep T's data in it
 *   readnext=NAME:T     as read, with "%r" the next rank's number ((rank + 1) % ranks) and
 *                       that rank's data checked: a rank reading its neighbour's file
 *   readshared=NAME:T   routes NAME and checks every rank's block of timestep T
 *   completerestart[=V] SCR_Complete_restart(V, else whether every read of this rank worked)
 *   restart[=reject|reject1]  the guide's restart: Have, Start, read NAME/rank_%r.ckpt
 *                       (its timestep from its header), Complete (=reject: every rank says
 *                       it failed; reject1: rank 1 alone); prints the name, the timestep read
 *                       and whether the data verified
 *   restartloop         the guide's loop of restarts until one succeeds or none is left
 *   readprefix=NAME[:N] reads PREFIX/NAME/rank_<k>.ckpt itself, without SCR (PREFIX: SCR_PREFIX,
 *                       else the working directory), for every k < N (default: as many as
 *                       ranks) this rank takes (k = rank, rank + ranks, ...); prints the
 *                       timestep all those files hold (-1: one is missing or wrong)
 *   chdir=DIR           changes the working directory
 *   postrecv            posts a receive of any source and tag on MPI_COMM_WORLD, left open
 *   waitrecv            sends the right neighbour its message (tag 77), waits for the
 *                       posted receive and checks it got the left neighbour's, intact
 *   sh=COMMAND          rank 0 runs COMMAND with system() while the others wait
 *   current=NAME | drop=NAME | delete=NAME   SCR_Current, SCR_Drop, SCR_Delete
 *   version             SCR_Get_version
 *   sleep=MS            sleeps
 *   quit                ends without SCR_Finalize, as a job killed here would
 * Exits 0 unless a step could not run (a bad step). */
#include <fcntl.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "scr.h"

static int rank, ranks;
static long size = 1000;
static int valid = 1; /* this rank's writes or reads since the last complete */
static int message = -1; /* the application's own message (postrecv, waitrecv) */
static MPI_Request posted = MPI_REQUEST_NULL;

static unsigned char pattern(int r, int k, int t, long i) {
  uint64_t w = ((uint64_t)t << 56) ^ ((uint64_t)r << 40) ^ ((uint64_t)k << 32) ^ (uint64_t)(i / 8);
  return (unsigned char)(w >> (8 * (i % 8)));
}

/* the value if every rank has it, else INT32_MIN */
static int agreed(int v) {
  int lo, hi;
  MPI_Allreduce(&v, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&v, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi ? v : INT32_MIN;
}

static void say(const char* step, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const char* step, const char* fmt, ...) {
  if (rank != 0) return;
  char text[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  printf("guide: %s -> %s\n", step, text);
}

static const char* rc_text(int rc) {
  static char buf[32];
  rc = agreed(rc);
  if (rc == INT32_MIN) return "rc=mixed";
  snprintf(buf, sizeof buf, "rc=%d", rc);
  return buf;
}

/* NAME with %r replaced by rank r */
static void expand_as(char* out, size_t n, const char* name, int r) {
  size_t o = 0;
  for (const char* p = name; *p && o + 12 < n; p++) {
    if (p[0] == '%' && p[1] == 'r') {
      o += snprintf(out + o, n - o, "%d", r);
      p++;
    } else {
      out[o++] = *p;
    }
  }
  out[o] = 0;
}

/* NAME with %r replaced by this rank */
static void expand(char* out, size_t n, const char* name) { expand_as(out, n, name, rank); }

/* a dataset name argument: "-" is NULL, "@N" N letters x */
static const char* dataset_name(const char* arg, char* buf, size_t n) {
  if (strcmp(arg, "-") == 0) return NULL;
  if (arg[0] == '@') {
    size_t len = (size_t)atol(arg + 1);
    if (len >= n) len = n - 1;
    memset(buf, 'x', len);
    buf[len] = 0;
    return buf;
  }
  snprintf(buf, n, "%s", arg);
  return buf;
}

static int flags_of(const char* s) {
  int f = SCR_FLAG_NONE, here = 1;
  for (; s && *s; s++) {
    if (*s == '1') here = rank == 1;
    if (here && *s == 'c') f |= SCR_FLAG_CHECKPOINT;
    if (here && *s == 'o') f |= SCR_FLAG_OUTPUT;
  }
  return f;
}

/* splits "A:B:C" into at most 3 parts (in place) */
static int split(char* arg, char** parts) {
  int n = 0;
  parts[0] = parts[1] = parts[2] = NULL;
  while (arg && n < 3) {
    parts[n++] = arg;
    arg = strchr(arg, ':');
    if (arg) *arg++ = 0;
  }
  return n;
}

static int write_data(const char* path, int t) {
  FILE* f = fopen(path, "w");
  if (!f) return 0;
  long long ts = t;
  int ok = fwrite(&ts, sizeof ts, 1, f) == 1;
  for (long i = 0; ok && i < size; i++) ok = fputc(pattern(rank, 0, t, i), f) != EOF;
  return (fclose(f) == 0) && ok;
}

/* the timestep in the header of rank r's file when its data verifies, else -1 */
static int read_data_of(const char* path, int r) {
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  long long ts = -1;
  int ok = fread(&ts, sizeof ts, 1, f) == 1;
  for (long i = 0; ok && i < size; i++) ok = fgetc(f) == pattern(r, 0, (int)ts, i);
  ok = ok && fgetc(f) == EOF;
  fclose(f);
  return ok ? (int)ts : -1;
}

static int read_data(const char* path) { return read_data_of(path, rank); }

static int route(const char* step, const char* name, char* file) {
  int rc = SCR_Route_file(name, file);
  printf("guide: rank %d: %s -> rc=%d %s\n", rank, step, rc, rc == SCR_SUCCESS ? file : "");
  return rc == SCR_SUCCESS;
}

/* one restart as the guide writes it: returns whether it succeeded (-1: no checkpoint) */
static int restart_once(const char* mode) {
  int have = 0;
  char name[SCR_MAX_FILENAME] = "", started[SCR_MAX_FILENAME] = "";
  int rc = SCR_Have_restart(&have, name);
  if (agreed(rc) != SCR_SUCCESS || !agreed(have)) {
    say("restart", "none (have %s flag=%d)", rc_text(rc), have);
    return -1;
  }
  SCR_Start_restart(started);
  char rel[SCR_MAX_FILENAME + 64], file[SCR_MAX_FILENAME];
  snprintf(rel, sizeof rel, "%s/rank_%d.ckpt", started, rank);
  int t = SCR_Route_file(rel, file) == SCR_SUCCESS ? read_data(file) : -1;
  int ok = t >= 0;
  if (mode && strcmp(mode, "reject") == 0) ok = 0;
  if (mode && strcmp(mode, "reject1") == 0 && rank == 1) ok = 0;
  int done = SCR_Complete_restart(ok);
  int all_t = agreed(t);
  say("restart", "%s t=%d data=%s %s", started, all_t == INT32_MIN ? -2 : all_t,
      agreed(t >= 0) == 1 ? "verified" : "bad", rc_text(done));
  return agreed(done) == SCR_SUCCESS;
}

static const char* prefix_dir(char* buf, size_t n) {
  const char* p = getenv("SCR_PREFIX");
  if (p && *p) return p;
  return getcwd(buf, n);
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  for (int a = 1; a < argc; a++) {
    char step[8192], *arg = NULL, *parts[3];
    snprintf(step, sizeof step, "%s", argv[a]);
    char* eq = strchr(step, '=');
    if (eq) { *eq = 0; arg = eq + 1; }
    const char* s = argv[a];
    char name[SCR_MAX_FILENAME + 64], file[SCR_MAX_FILENAME];
    if (!strcmp(step, "size")) {
      size = atol(arg);
    } else if (!strcmp(step, "config") || !strcmp(step, "configf")) {
      const char* got;
      if (!strcmp(step, "config")) {
        got = SCR_Config(arg);
      } else {
        split(arg, parts);
        got = SCR_Configf("%s=%s", parts[0], parts[1] ? parts[1] : "");
      }
      if (got) say(s, "\"%s\"", got); else say(s, "NULL");
      free((void*)got);
    } else if (!strcmp(step, "init")) {
      say(s, "%s", rc_text(SCR_Init()));
    } else if (!strcmp(step, "finalize")) {
      say(s, "%s", rc_text(SCR_Finalize()));
    } else if (!strcmp(step, "need") || !strcmp(step, "shouldexit")) {
      int flag = -1;
      int rc = !strcmp(step, "need") ? SCR_Need_checkpoint(&flag) : SCR_Should_exit(&flag);
      int f = agreed(flag);
      if (f == INT32_MIN) say(s, "flag=mixed %s", rc_text(rc)); else say(s, "flag=%d %s", f, rc_text(rc));
    } else if (!strcmp(step, "start")) {
      split(arg, parts);
      char expanded[SCR_MAX_FILENAME];
      expand(expanded, sizeof expanded, parts[0]);
      say(s, "%s", rc_text(SCR_Start_output(dataset_name(expanded, name, sizeof name), flags_of(parts[1]))));
    } else if (!strcmp(step, "route")) {
      expand(name, sizeof name, arg);
      route(s, name, file);
    } else if (!strcmp(step, "write") || !strcmp(step, "shared")) {
      split(arg, parts);
      expand(name, sizeof name, parts[0]);
      int t = parts[1] ? atoi(parts[1]) : 0;
      int ok = route(s, name, file);
      if (ok && !strcmp(step, "write")) {
        ok = write_data(file, t);
      } else if (ok) {
        int fd = open(file, O_WRONLY | O_CREAT, 0644);
        unsigned char* buf = malloc(size);
        for (long i = 0; i < size; i++) buf[i] = pattern(rank, 0, t, i);
        ok = fd >= 0 && pwrite(fd, buf, size, (off_t)rank * size) == size;
        ok = (fd >= 0 && close(fd) == 0) && ok;
        free(buf);
      }
      if (!ok) printf("guide: rank %d: %s -> could not write\n", rank, s);
      valid = valid && ok;
    } else if (!strcmp(step, "complete")) {
      int v = arg ? atoi(arg) : valid;
      valid = 1;
      say(s, "%s", rc_text(SCR_Complete_output(v)));
    } else if (!strcmp(step, "ckpt")) {
      split(arg, parts);
      int t = parts[1] ? atoi(parts[1]) : 0;
      int rc = SCR_Start_output(parts[0], flags_of(parts[2] ? parts[2] : "c"));
      snprintf(name, sizeof name, "%s/rank_%d.ckpt", parts[0], rank);
      int ok = rc == SCR_SUCCESS && SCR_Route_file(name, file) == SCR_SUCCESS && write_data(file, t);
      say(s, "%s", rc_text(SCR_Complete_output(ok)));
    } else if (!strcmp(step, "have")) {
      int flag = -1;
      char got[SCR_MAX_FILENAME] = "";
      int rc = SCR_Have_restart(&flag, arg && !strcmp(arg, "null") ? NULL : got);
      int f = agreed(flag);
      if (f == INT32_MIN) say(s, "flag=mixed name=%s %s", got, rc_text(rc));
      else say(s, "flag=%d name=%s %s", f, got, rc_text(rc));
    } else if (!strcmp(step, "startrestart")) {
      char got[SCR_MAX_FILENAME] = "";
      int rc = SCR_Start_restart(arg && !strcmp(arg, "null") ? NULL : got);
      say(s, "name=%s %s", got, rc_text(rc));
    } else if (!strcmp(step, "read") || !strcmp(step, "readshared")) {
      split(arg, parts);
      expand(name, sizeof name, parts[0]);
      int t = parts[1] ? atoi(parts[1]) : 0, ok = route(s, name, file);
      if (ok && !strcmp(step, "read")) {
        ok = read_data(file) == t;
      } else if (ok) {
        FILE* f = fopen(file, "r");
        ok = f != NULL;
        for (long i = 0; ok && i < (long)ranks * size; i++) ok = fgetc(f) == pattern((int)(i / size), 0, t, i % size);
        ok = ok && fgetc(f) == EOF;
        if (f) fclose(f);
      }
      if (!ok) printf("guide: rank %d: %s -> data bad\n", rank, s);
      valid = valid && ok;
    } else if (!strcmp(step, "readnext")) {
      int next = (rank + 1) % ranks;
      split(arg, parts);
      expand_as(name, sizeof name, parts[0], next);
      int t = parts[1] ? atoi(parts[1]) : 0, ok = route(s, name, file);
      ok = ok && read_data_of(file, next) == t;
      if (!ok) printf("guide: rank %d: %s -> data bad\n", rank, s);
      valid = valid && ok;
    } else if (!strcmp(step, "completerestart")) {
      int v = arg ? atoi(arg) : valid;
      valid = 1;
      say(s, "%s", rc_text(SCR_Complete_restart(v)));
    } else if (!strcmp(step, "restart")) {
      restart_once(arg);
    } else if (!strcmp(step, "restartloop")) {
      int r;
      while ((r = restart_once(NULL)) == 0) {}
      say(s, "%s", r > 0 ? "restarted" : "no checkpoint left");
    } else if (!strcmp(step, "readprefix")) {
      char cwd[SCR_MAX_FILENAME];
      split(arg, parts);
      int n = parts[1] ? atoi(parts[1]) : ranks, t = -3;
      for (int k = rank; k < n; k += ranks) {
        snprintf(file, sizeof file, "%s/%s/rank_%d.ckpt", prefix_dir(cwd, sizeof cwd), parts[0], k);
        int got = read_data_of(file, k);
        t = (t == -3 || t == got) ? got : -1;
      }
      t = agreed(t);
      say(s, "t=%d", t == INT32_MIN ? -1 : t);
    } else if (!strcmp(step, "chdir")) {
      if (chdir(arg) != 0) { perror(arg); MPI_Abort(MPI_COMM_WORLD, 2); }
    } else if (!strcmp(step, "postrecv")) {
      MPI_Irecv(&message, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &posted);
    } else if (!strcmp(step, "waitrecv")) {
      int mine = 1000 + rank;
      MPI_Send(&mine, 1, MPI_INT, (rank + 1) % ranks, 77, MPI_COMM_WORLD);
      MPI_Status st;
      MPI_Wait(&posted, &st);
      int left = (rank + ranks - 1) % ranks;
      int ok = st.MPI_SOURCE == left && st.MPI_TAG == 77 && message == 1000 + left;
      say(s, "%s", agreed(ok) == 1 ? "the application's message, intact" : "another message");
    } else if (!strcmp(step, "sh")) {
      int rc = 0;
      if (rank == 0) rc = system(arg);
      MPI_Barrier(MPI_COMM_WORLD);
      say(s, "exit=%d", rc);
    } else if (!strcmp(step, "current")) {
      say(s, "%s", rc_text(SCR_Current(arg)));
    } else if (!strcmp(step, "drop")) {
      say(s, "%s", rc_text(SCR_Drop(arg)));
    } else if (!strcmp(step, "delete")) {
      say(s, "%s", rc_text(SCR_Delete(arg)));
    } else if (!strcmp(step, "version")) {
      say(s, "%s", SCR_Get_version());
    } else if (!strcmp(step, "sleep")) {
      usleep(1000 * atol(arg));
    } else if (!strcmp(step, "quit")) {
      break;
    } else {
      if (rank == 0) fprintf(stderr, "guide_steps: unknown step %s\n", s);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  say("end", "ok");
  MPI_Finalize();
  return 0;
}
