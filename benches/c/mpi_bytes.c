/* An MPI profiling-interface shim (LD_PRELOAD) that counts the bytes MPI delivers to this
 * process: what its receives, and its part of every collective, bring in (a broadcast's
 * root and a gather's senders receive nothing; an allgather brings the other ranks'
 * blocks). Written for benches/scale.sh to see which phases make one rank receive what
 * grows with the job. bench_mpi_bytes_received() reads the count; MPI calls made inside
 * MPI (none here) are not double counted since only the MPI_ entry points are wrapped.
 * Build: mpicc -shared -fPIC -o mpi_bytes.so mpi_bytes.c */
#include <mpi.h>

static long long received;

long long bench_mpi_bytes_received(void) { return received; }

static long long bytes(int count, MPI_Datatype type) {
  int size = 0;
  PMPI_Type_size(type, &size);
  return (long long)count * size;
}

static int rank_in(MPI_Comm comm) {
  int r = 0;
  PMPI_Comm_rank(comm, &r);
  return r;
}

static int size_of(MPI_Comm comm) {
  int n = 1;
  PMPI_Comm_size(comm, &n);
  return n;
}

static void count_status(MPI_Status* status, MPI_Datatype type) {
  int n = 0;
  PMPI_Get_count(status, type, &n);
  if (n != MPI_UNDEFINED) received += bytes(n, type);
}

int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status* status) {
  MPI_Status local;
  if (status == MPI_STATUS_IGNORE) status = &local;
  int rc = PMPI_Recv(buf, count, type, source, tag, comm, status);
  count_status(status, type);
  return rc;
}

int MPI_Mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status) {
  MPI_Status local;
  if (status == MPI_STATUS_IGNORE) status = &local;
  int rc = PMPI_Mrecv(buf, count, type, message, status);
  count_status(status, type);
  return rc;
}

/* nonblocking receives are counted as posted: the callers post exact lengths */
int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request* request) {
  received += bytes(count, type);
  return PMPI_Irecv(buf, count, type, source, tag, comm, request);
}

int MPI_Imrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Request* request) {
  received += bytes(count, type);
  return PMPI_Imrecv(buf, count, type, message, request);
}

int MPI_Sendrecv(const void* sbuf, int scount, MPI_Datatype stype, int dest, int stag, void* rbuf,
                 int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                 MPI_Status* status) {
  MPI_Status local;
  if (status == MPI_STATUS_IGNORE) status = &local;
  int rc = PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm,
                         status);
  count_status(status, rtype);
  return rc;
}

int MPI_Bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  if (rank_in(comm) != root) received += bytes(count, type);
  return PMPI_Bcast(buf, count, type, root, comm);
}

int MPI_Allgather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm) {
  received += bytes(rcount, rtype) * (size_of(comm) - 1);
  return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int MPI_Allgatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf,
                   const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm) {
  int me = rank_in(comm), n = size_of(comm);
  for (int i = 0; i < n; i++)
    if (i != me) received += bytes(rcounts[i], rtype);
  return PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
}

int MPI_Gather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
               MPI_Datatype rtype, int root, MPI_Comm comm) {
  if (rank_in(comm) == root) received += bytes(rcount, rtype) * (size_of(comm) - 1);
  return PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
}

int MPI_Gatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, const int rcounts[],
                const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm) {
  int me = rank_in(comm), n = size_of(comm);
  if (me == root)
    for (int i = 0; i < n; i++)
      if (i != me) received += bytes(rcounts[i], rtype);
  return PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
}

int MPI_Scatter(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm) {
  if (rank_in(comm) != root) received += bytes(rcount, rtype);
  return PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
}

int MPI_Scatterv(const void* sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                 void* rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm) {
  if (rank_in(comm) != root) received += bytes(rcount, rtype);
  return PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
}

int MPI_Allreduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  received += bytes(count, type);
  return PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
}

int MPI_Reduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm) {
  if (rank_in(comm) == root) received += bytes(count, type);
  return PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
}

int MPI_Scan(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  received += bytes(count, type);
  return PMPI_Scan(sbuf, rbuf, count, type, op, comm);
}

int MPI_Exscan(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm) {
  received += bytes(count, type);
  return PMPI_Exscan(sbuf, rbuf, count, type, op, comm);
}

int MPI_Alltoall(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm) {
  received += bytes(rcount, rtype) * (size_of(comm) - 1);
  return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int MPI_Alltoallv(const void* sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                  void* rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                  MPI_Comm comm) {
  int me = rank_in(comm), n = size_of(comm);
  for (int i = 0; i < n; i++)
    if (i != me) received += bytes(rcounts[i], rtype);
  return PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
}

/* nonblocking collectives, counted as posted */
int MPI_Iallreduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request* request) {
  received += bytes(count, type);
  return PMPI_Iallreduce(sbuf, rbuf, count, type, op, comm, request);
}

int MPI_Ibcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request* request) {
  if (rank_in(comm) != root) received += bytes(count, type);
  return PMPI_Ibcast(buf, count, type, root, comm, request);
}

int MPI_Iallgather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request* request) {
  received += bytes(rcount, rtype) * (size_of(comm) - 1);
  return PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, request);
}

int MPI_Ireduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request* request) {
  if (rank_in(comm) == root) received += bytes(count, type);
  return PMPI_Ireduce(sbuf, rbuf, count, type, op, root, comm, request);
}
