! Example SCR application (Fortran): restarts from the newest checkpoint if there is one,
! verifies it, then writes CKPTS checkpoints. Rank r's file in timestep t is an unformatted
! stream: the timestep, then N integers with value r + i + t.
program test_ckpt
  use mpi
  implicit none
  include 'scrf.h'
  integer, parameter :: n = 20000, ckpts = 2
  integer :: ierr, rank, have, flag, valid, t, start, i, u, ts, ok, allok
  integer :: buf(n)
  character(len=SCR_MAX_FILENAME) :: dset, name, file

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call SCR_Init(ierr)
  start = 0
  call SCR_Have_restart(have, dset, ierr)
  if (have == 1) then
    call SCR_Start_restart(dset, ierr)
    read(dset(6:), *) t
    write(name, '(A,I0,A,I0,A)') 'ckpt.', t, '/rank_', rank, '.ckpt'
    call SCR_Route_file(name, file, ierr)
    ok = 0
    if (ierr == SCR_SUCCESS) then
      open(newunit=u, file=trim(file), access='stream', form='unformatted', status='old')
      read(u) ts, buf
      close(u)
      ok = 1
      if (ts /= t) ok = 0
      do i = 1, n
        if (buf(i) /= rank + i + t) ok = 0
      end do
    end if
    call SCR_Complete_restart(ok, ierr)
    if (ierr /= SCR_SUCCESS) then
      print *, 'test_ckpt: restart failed verification'
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
    start = t
    if (rank == 0) print '(A,A,A)', 'test_ckpt: restarted from ', trim(dset), ', data verified'
  else if (rank == 0) then
    print '(A)', 'test_ckpt: no checkpoint, starting from the beginning'
  end if
  do t = start + 1, start + ckpts
    call SCR_Need_checkpoint(flag, ierr)
    if (flag == 0) cycle
    write(dset, '(A,I0)') 'ckpt.', t
    call SCR_Start_output(dset, SCR_FLAG_CHECKPOINT, ierr)
    write(name, '(A,I0,A,I0,A)') 'ckpt.', t, '/rank_', rank, '.ckpt'
    call SCR_Route_file(name, file, ierr)
    do i = 1, n
      buf(i) = rank + i + t
    end do
    open(newunit=u, file=trim(file), access='stream', form='unformatted', status='replace')
    write(u) t, buf
    close(u)
    valid = 1
    call SCR_Complete_output(valid, ierr)
    call MPI_Allreduce(ierr, allok, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, i)
    if (allok /= SCR_SUCCESS) call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end do
  call SCR_Finalize(ierr)
  if (rank == 0) print '(A)', 'test_ckpt: done'
  call MPI_Finalize(ierr)
end program test_ckpt
