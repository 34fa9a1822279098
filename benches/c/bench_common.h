/* What the benchmark programs share: writing a checkpoint file as an application does. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H
#include <fcntl.h>
#include <stddef.h>
#include <unistd.h>

/* Writes n bytes of buf to path (created 0600, truncated), with an fsync when sync is set;
 * returns 1 on success. */
static int write_file(const char* path, const char* buf, size_t n, int sync) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return 0;
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(fd, buf + done, n - done);
    if (w <= 0) { close(fd); return 0; }
    done += (size_t)w;
  }
  int ok = !sync || fsync(fd) == 0;
  return close(fd) == 0 && ok;
}
#endif
