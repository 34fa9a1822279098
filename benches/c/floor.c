/* The floor of each redundancy scheme on this machine: the same bytes moved with plain MPI
 * and written once, with no SCR bookkeeping, from data already in memory. Each rank holds
 * SIZE MiB; rank 0 prints the median seconds over COUNT timed rounds (after one warm-up).
 *
 * Usage: floor MODE SIZE_MIB COUNT BUF_BYTES DIR
 *   write    each rank writes its SIZE MiB to DIR and fsyncs (SINGLE's floor)
 *   partner  each rank sends its SIZE MiB to its right neighbour in BUF_BYTES pieces while
 *            receiving its left neighbour's, writing each received piece to DIR; one fsync
 *   xor      the pipelined reduce-scatter ring over n ranks: the data is n-1 chunks of
 *            SIZE/(n-1); in n-1 steps per piece each rank XORs its chunk for the buffer's
 *            eventual holder into what its left neighbour sent and passes it right; the
 *            last arrival is this rank's parity, written to DIR; one fsync
 *   rs       the same ring for Reed-Solomon with two parity slots: data in n-2 chunks, n-2
 *            steps each carrying both slots' sums, the last step sending slot s s+1 places
 *            right (2 x SIZE sent per rank, the least for a code surviving 2 losses; the
 *            XOR kernel stands in for the Galois-field multiply, so this is a lower bound)
 * FLOOR_WINDOW pieces travel at once (default: 8 MiB of them, at least 2 and at most 64, as
 * the library sends): with 1, every piece waits for the one before it, which on an
 * oversubscribed machine costs a scheduler round trip per piece.
 * Waits test and yield the processor between tests, as the library's do (a blocking wait
 * busy-polls and takes the core from a rank that still has work when ranks outnumber
 * cores); FLOOR_BUSY=1 waits with MPI_Wait instead.
 * Every round writes a new file (the old one is removed first), as a checkpoint does. */
#include <mpi.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static void die(const char* what) {
  perror(what);
  MPI_Abort(MPI_COMM_WORLD, 4);
}

static void pwrite_all(int fd, const char* buf, size_t n, off_t at) {
  while (n > 0) {
    ssize_t w = pwrite(fd, buf, n, at);
    if (w <= 0) die("pwrite");
    buf += w; n -= (size_t)w; at += w;
  }
}

static size_t piece_len(size_t total, size_t piece, size_t i) {
  return total - i * piece < piece ? total - i * piece : piece;
}

/* out = sum ^ src over n bytes, in one pass over the three */
static void xor_sum(char* restrict out, const char* restrict sum, const char* restrict src,
                    size_t n) {
  uint64_t* o = (uint64_t*)out;
  const uint64_t* a = (const uint64_t*)sum;
  const uint64_t* b = (const uint64_t*)src;
  size_t words = n / 8;
  for (size_t i = 0; i < words; i++) o[i] = a[i] ^ b[i];
  for (size_t i = words * 8; i < n; i++) out[i] = sum[i] ^ src[i];
}

static int busy_waits;

static void wait_all(int count, MPI_Request* reqs) {
  if (busy_waits) {
    MPI_Waitall(count, reqs, MPI_STATUSES_IGNORE);
    return;
  }
  for (int done = 0;;) {
    MPI_Testall(count, reqs, &done, MPI_STATUSES_IGNORE);
    if (done) return;
    sched_yield();
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc < 6) {
    if (rank == 0) fprintf(stderr, "usage: floor write|partner|xor|rs SIZE_MIB COUNT BUF_BYTES DIR\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char* mode = argv[1];
  size_t size = (size_t)atol(argv[2]) << 20;
  int count = atoi(argv[3]);
  size_t piece = (size_t)atol(argv[4]);
  const char* dir = argv[5];
  busy_waits = getenv("FLOOR_BUSY") && atoi(getenv("FLOOR_BUSY")) != 0;
  int left = (rank + n - 1) % n, right = (rank + 1) % n;
  char* data = malloc(size);
  for (size_t i = 0; i < size; i++) data[i] = (char)(i * 7 + rank);
  /* FLOOR_WINDOW pieces in flight at once (default: 8 MiB of them, 2 to 64, as the library
   * keeps in flight; 1 is the strict piece-by-piece ring) */
  size_t window = (8u << 20) / (piece ? piece : 1);
  if (window < 2) window = 2;
  if (window > 64) window = 64;
  if (getenv("FLOOR_WINDOW")) window = (size_t)atol(getenv("FLOOR_WINDOW"));
  if (window < 1) window = 1;
  size_t pieces = (size + piece - 1) / piece;
  /* parity: k slots (rs: 2), the data in n-k chunks; the k sums of a piece travel together,
   * so a window holds 8 MiB of sums, as the library's does */
  int k = strcmp(mode, "rs") == 0 ? 2 : 1;
  size_t chunk = (size + (size_t)(n - k - 1)) / (size_t)(n - k);
  size_t chunk_pieces = (chunk + piece - 1) / piece;
  if (k > 1 && !getenv("FLOOR_WINDOW")) {
    window = (8u << 20) / (piece * (size_t)k ? piece * (size_t)k : 1);
    if (window < 2) window = 2;
    if (window > 64) window = 64;
  }
  char* sendb = malloc(piece * window * (size_t)k);
  char* recvb = malloc(piece * window * (size_t)k);
  MPI_Request* reqs = malloc(sizeof(MPI_Request) * 2 * window * (size_t)k);
  double* t = malloc(sizeof(double) * (count + 1));
  char path[4096];
  snprintf(path, sizeof path, "%s/floor.%s.%d", dir, mode, rank);
  for (int c = 0; c <= count; c++) {
    unlink(path);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) die(path);
    if (strcmp(mode, "write") == 0) {
      pwrite_all(fd, data, size, 0);
    } else if (strcmp(mode, "partner") == 0) {
      /* a window of pieces in flight: their sends go out from the data itself, the receives
       * land in the window's buffers and are written; the sends are waited for once per
       * window (waiting for each send before the next piece costs a round trip per piece) */
      for (size_t first = 0; first < pieces; first += window) {
        size_t last = first + window < pieces ? first + window : pieces;
        for (size_t i = first; i < last; i++) {
          MPI_Isend(data + i * piece, (int)piece_len(size, piece, i), MPI_BYTE, right, 1,
                    MPI_COMM_WORLD, &reqs[2 * (i - first)]);
          MPI_Irecv(recvb + (i - first) * piece, (int)piece_len(size, piece, i), MPI_BYTE, left, 1,
                    MPI_COMM_WORLD, &reqs[2 * (i - first) + 1]);
        }
        for (size_t i = first; i < last; i++) {
          wait_all(1, &reqs[2 * (i - first) + 1]);
          pwrite_all(fd, recvb + (i - first) * piece, piece_len(size, piece, i), (off_t)(i * piece));
        }
        for (size_t i = first; i < last; i++) wait_all(1, &reqs[2 * (i - first)]);
      }
    } else if (strcmp(mode, "xor") == 0 || strcmp(mode, "rs") == 0) {
      /* a window of pieces travels together; in each of the n-k steps a rank adds its
       * chunk for the stripe it works on to the k sums and passes them right; after the
       * last step sum s goes s+1 places right, to its holder */
      for (size_t first = 0; first < chunk_pieces; first += window) {
        size_t last = first + window < chunk_pieces ? first + window : chunk_pieces;
        memset(recvb, 0, (last - first) * (size_t)k * piece);
        for (int step = 0; step < n - k; step++) {
          int final = step == n - k - 1;
          int r = 0;
          for (size_t i = first; i < last; i++)
            for (int s = 0; s < k; s++) {
              size_t len = piece_len(chunk, piece, i), off = i * piece;
              char* sb = sendb + ((i - first) * (size_t)k + (size_t)s) * piece;
              char* rb = recvb + ((i - first) * (size_t)k + (size_t)s) * piece;
              size_t at = (size_t)step * chunk + off;
              size_t covered = at < size ? (size - at < len ? size - at : len) : 0;
              xor_sum(sb, rb, data + (covered ? at : 0), covered);
              memcpy(sb + covered, rb + covered, len - covered);
              int hop = final ? s + 1 : 1;
              MPI_Isend(sb, (int)len, MPI_BYTE, (rank + hop) % n, 2, MPI_COMM_WORLD, &reqs[r++]);
              MPI_Irecv(rb, (int)len, MPI_BYTE, (rank + n - hop) % n, 2, MPI_COMM_WORLD, &reqs[r++]);
            }
          wait_all(r, reqs);
        }
        for (size_t i = first; i < last; i++)
          for (int s = 0; s < k; s++)
            pwrite_all(fd, recvb + ((i - first) * (size_t)k + (size_t)s) * piece,
                       piece_len(chunk, piece, i), (off_t)((size_t)s * chunk + i * piece));
      }
    } else {
      if (rank == 0) fprintf(stderr, "floor: unknown mode %s (write, partner, xor or rs)\n", mode);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (fsync(fd) != 0) die("fsync");
    close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    t[c] = MPI_Wtime() - t0;
  }
  unlink(path);
  qsort(t + 1, count, sizeof(double), cmp);
  if (rank == 0) printf("median_seconds %.4f\n", t[1 + count / 2]);
  free(data); free(sendb); free(recvb); free(reqs); free(t);
  MPI_Finalize();
  return 0;
}
