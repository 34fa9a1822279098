! SCR v3.1's Fortran calls: SCR_CONFIG before SCR_INIT (set and query), then
!   v31_api first   writes ckpt.1 and ckpt.2
!   v31_api second  SCR_CURRENT('ckpt.1'), restarts from it (and lists its files with
!                   this implementation's SCR_RESTART_WRITERS, SCR_RESTART_FILE_COUNT and
!                   SCR_RESTART_FILE_NAME), SCR_DROP('ckpt.2'), SCR_DELETE('ckpt.2')
! A failed expectation prints "v31f: FAILED: ..." and aborts.
program v31_api
  use mpi
  implicit none
  include 'scrf.h'
  integer :: ierr, rank, ranks, have, t, u, r, writers, count
  character(len=16) :: mode
  character(len=64) :: val, version
  character(len=SCR_MAX_FILENAME) :: dset, name, file, listed

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, ranks, ierr)
  call get_command_argument(1, mode)
  call SCR_GET_VERSION(version, ierr)
  call check(ierr == SCR_SUCCESS .and. index(version, 'SCR') > 0, 'SCR_GET_VERSION')
  call SCR_CONFIG('SCR_FLUSH=1', val, ierr)
  call check(ierr == SCR_SUCCESS .and. len_trim(val) == 0, 'SCR_CONFIG set')
  call SCR_CONFIG('SCR_FLUSH', val, ierr)
  call check(ierr == SCR_SUCCESS .and. trim(val) == '1', 'SCR_CONFIG query')
  call SCR_CONFIG('SCR_FLUSH=often', val, ierr)
  call check(ierr /= SCR_SUCCESS, 'a bad value is refused')
  call SCR_INIT(ierr)
  call check(ierr == SCR_SUCCESS, 'SCR_INIT')
  if (trim(mode) == 'first') then
    do t = 1, 2
      write(dset, '(A,I0)') 'ckpt.', t
      call SCR_START_OUTPUT(dset, SCR_FLAG_CHECKPOINT, ierr)
      write(name, '(A,I0,A,I0,A)') 'ckpt.', t, '/rank_', rank, '.txt'
      call SCR_ROUTE_FILE(name, file, ierr)
      open(newunit=u, file=trim(file), status='replace')
      write(u, *) rank, t
      close(u)
      call SCR_COMPLETE_OUTPUT(1, ierr)
      call check(ierr == SCR_SUCCESS, 'SCR_COMPLETE_OUTPUT')
    end do
  else
    call SCR_CURRENT('ckpt.1', ierr)
    call check(ierr == SCR_SUCCESS, 'SCR_CURRENT')
    call SCR_HAVE_RESTART(have, dset, ierr)
    call check(have == 1 .and. trim(dset) == 'ckpt.1', 'the restart is ckpt.1')
    call SCR_START_RESTART(dset, ierr)
    write(name, '(A,I0,A)') 'ckpt.1/rank_', rank, '.txt'
    call SCR_RESTART_WRITERS(writers, ierr)
    call check(ierr == SCR_SUCCESS .and. writers == ranks, 'SCR_RESTART_WRITERS')
    call SCR_RESTART_FILE_COUNT(count, ierr)
    call check(ierr == SCR_SUCCESS .and. count == 1, 'SCR_RESTART_FILE_COUNT')
    call SCR_RESTART_FILE_NAME(1, listed, ierr)
    call check(ierr == SCR_SUCCESS .and. index(listed, '/'//trim(name)) > 0, &
      'SCR_RESTART_FILE_NAME names this rank''s file')
    call SCR_ROUTE_FILE(name, file, ierr)
    open(newunit=u, file=trim(file), status='old')
    read(u, *) r, t
    close(u)
    call check(r == rank .and. t == 1, 'ckpt.1 holds timestep 1')
    call SCR_COMPLETE_RESTART(1, ierr)
    call check(ierr == SCR_SUCCESS, 'SCR_COMPLETE_RESTART')
    if (rank == 0) print '(A)', 'v31f: restarted from ckpt.1'
    call SCR_DROP('ckpt.2', ierr)
    call check(ierr == SCR_SUCCESS, 'SCR_DROP')
    call SCR_DELETE('ckpt.2', ierr)
    call check(ierr == SCR_SUCCESS, 'SCR_DELETE')
  end if
  call SCR_FINALIZE(ierr)
  if (rank == 0) print '(A,A,A)', 'v31f: ', trim(mode), ' run done'
  call MPI_Finalize(ierr)
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer :: e
    if (.not. ok) then
      print '(A,I0,A,A)', 'v31f: FAILED: rank ', rank, ': ', what
      call MPI_Abort(MPI_COMM_WORLD, 1, e)
    end if
  end subroutine check
end program v31_api
