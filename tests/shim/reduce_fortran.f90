! reduce_fortran: MPI_REDUCE (MPI_SUM) on INTEGER and DOUBLE PRECISION arrays at every
! root, in place at the root and not, MPI_BCAST of both, and MPI_ALLREDUCE (MPI_SUM of
! DOUBLE PRECISION, MPI_MAX of INTEGER, in place and not, checked on every rank), through the Fortran
! bindings (MPICH's call the C MPI_Reduce/MPI_Bcast, which Canopy replaces; Open MPI's
! call PMPI_Reduce/PMPI_Bcast, so Canopy defines the Fortran symbols themselves).
! Inputs are small integers, so every sum is exact in any order; each root computes the
! expected values itself. With CANOPYTEST_EXPECT_INTERCEPT=1 the program also fails
! unless Canopy ran at least one of these collectives on every rank (fortran_check.c).
! Prints "reduce_fortran: N checks passed" (N summed over ranks) and exits with status 1
! on every rank after any failure.
program reduce_fortran
  use mpi
  use, intrinsic :: iso_c_binding, only: c_int
  implicit none
  interface
    ! fortran_check.c: this rank's checks and failures of CANOPYTEST_EXPECT_INTERCEPT.
    subroutine canopytest_check_intercept(nchecks, nfailures) bind(C, name='canopytest_check_intercept')
      import :: c_int
      integer(c_int), intent(out) :: nchecks, nfailures
    end subroutine canopytest_check_intercept
  end interface
  integer, parameter :: ncounts = 4
  integer, parameter :: counts(ncounts) = (/ 1, 7, 1000, 4099 /)
  integer :: ierr, rank, nprocs, root, ic, n, i, k, inplace
  integer, allocatable :: isend(:), irecv(:), iwant(:)
  double precision, allocatable :: dsend(:), drecv(:), dwant(:)
  integer :: checks, failures, totals(2), local(2)
  logical :: ok
  integer(c_int) :: intercept_checks, intercept_failures

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  checks = 0
  failures = 0

  allocate(isend(maxval(counts)), irecv(maxval(counts)), iwant(maxval(counts)))
  allocate(dsend(maxval(counts)), drecv(maxval(counts)), dwant(maxval(counts)))

  do root = 0, nprocs - 1
    do ic = 1, ncounts
      n = counts(ic)
      do inplace = 0, 1
        ! MPICH 4.0.2 crashes on in-place reductions at a non-zero root above 2 KB
        ! (pmodels/mpich#6540); the Fortran test keeps those small.
        if (inplace == 1 .and. root /= 0 .and. n * 8 >= 256) cycle

        ! INTEGER SUM
        do i = 1, n
          isend(i) = value_of(rank, i, root)
          irecv(i) = -7777
        end do
        if (inplace == 1 .and. rank == root) then
          irecv(1:n) = isend(1:n)
          call MPI_REDUCE(MPI_IN_PLACE, irecv, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
        else
          call MPI_REDUCE(isend, irecv, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
        end if
        if (rank == root) then
          do i = 1, n
            iwant(i) = 0
            do k = 0, nprocs - 1
              iwant(i) = iwant(i) + value_of(k, i, root)
            end do
          end do
          ok = all(irecv(1:n) == iwant(1:n))
        else
          ok = all(irecv(1:n) == -7777)
        end if
        call check(ok, 'INTEGER MPI_SUM', n, root, inplace)

        ! DOUBLE PRECISION SUM (quarter integers: exact)
        do i = 1, n
          dsend(i) = dble(value_of(rank, i, root + 17)) * 0.25d0
          drecv(i) = -1.5d0
        end do
        if (inplace == 1 .and. rank == root) then
          drecv(1:n) = dsend(1:n)
          call MPI_REDUCE(MPI_IN_PLACE, drecv, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, MPI_COMM_WORLD, ierr)
        else
          call MPI_REDUCE(dsend, drecv, n, MPI_DOUBLE_PRECISION, MPI_SUM, root, MPI_COMM_WORLD, ierr)
        end if
        if (rank == root) then
          do i = 1, n
            dwant(i) = 0.0d0
            do k = 0, nprocs - 1
              dwant(i) = dwant(i) + dble(value_of(k, i, root + 17)) * 0.25d0
            end do
          end do
          ok = all(drecv(1:n) == dwant(1:n))
        else
          ok = all(drecv(1:n) == -1.5d0)
        end if
        call check(ok, 'DOUBLE PRECISION MPI_SUM', n, root, inplace)
      end do

      ! BCAST of both
      do i = 1, n
        if (rank == root) then
          irecv(i) = value_of(root, i, 99)
          drecv(i) = dble(value_of(root, i, 98)) / 8.0d0
        else
          irecv(i) = -1
          drecv(i) = -1.0d0
        end if
      end do
      call MPI_BCAST(irecv, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
      call MPI_BCAST(drecv, n, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
      ok = .true.
      do i = 1, n
        if (irecv(i) /= value_of(root, i, 99)) ok = .false.
        if (drecv(i) /= dble(value_of(root, i, 98)) / 8.0d0) ok = .false.
      end do
      call check(ok, 'MPI_BCAST INTEGER + DOUBLE PRECISION', n, root, 0)
    end do
  end do

  ! MPI_ALLREDUCE: every rank checks the result.
  do ic = 1, ncounts
    n = counts(ic)
    do inplace = 0, 1
      do i = 1, n
        dsend(i) = dble(value_of(rank, i, 55)) * 0.25d0
        isend(i) = value_of(rank, i, 56)
      end do
      if (inplace == 1) then
        drecv(1:n) = dsend(1:n)
        irecv(1:n) = isend(1:n)
        call MPI_ALLREDUCE(MPI_IN_PLACE, drecv, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
        call MPI_ALLREDUCE(MPI_IN_PLACE, irecv, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
      else
        drecv(1:n) = -1.5d0
        irecv(1:n) = -7777
        call MPI_ALLREDUCE(dsend, drecv, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
        call MPI_ALLREDUCE(isend, irecv, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
      end if
      ok = .true.
      do i = 1, n
        dwant(i) = 0.0d0
        iwant(i) = -huge(0)
        do k = 0, nprocs - 1
          dwant(i) = dwant(i) + dble(value_of(k, i, 55)) * 0.25d0
          iwant(i) = max(iwant(i), value_of(k, i, 56))
        end do
        if (drecv(i) /= dwant(i) .or. irecv(i) /= iwant(i)) ok = .false.
      end do
      call check(ok, 'MPI_ALLREDUCE DOUBLE PRECISION SUM + INTEGER MAX', n, 0, inplace)
    end do
  end do

  ! Collective; before the MPI_ALLREDUCE below, which adds its outcome to the totals.
  call canopytest_check_intercept(intercept_checks, intercept_failures)
  checks = checks + intercept_checks
  failures = failures + intercept_failures

  local(1) = checks
  local(2) = failures
  call MPI_ALLREDUCE(local, totals, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (totals(2) == 0) then
      write (*, '(A,I0,A)') 'reduce_fortran: ', totals(1), ' checks passed'
    else
      write (*, '(A,I0,A,I0,A)') 'reduce_fortran: FAILED: ', totals(2), ' of ', totals(1), ' checks failed'
    end if
  end if
  ! Freed explicitly: a main program's allocatables are never freed at its end, which
  ! LeakSanitizer (tools/test-sanitizers.sh) reports as leaks.
  deallocate(isend, irecv, iwant, dsend, drecv, dwant)
  call MPI_FINALIZE(ierr)
  if (totals(2) /= 0) stop 1

contains

  ! A small deterministic integer in [-50, 50] for (rank, index, salt).
  integer function value_of(r, i, salt)
    integer, intent(in) :: r, i, salt
    value_of = mod(r * 7919 + i * 104729 + salt * 31 + mod(i * i, 97) * (r + 3), 101) - 50
  end function value_of

  subroutine check(cond, what, n, root, inplace)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    integer, intent(in) :: n, root, inplace
    checks = checks + 1
    if (.not. cond) then
      failures = failures + 1
      if (failures <= 20) write (*, '(A,I0,A,A,A,I0,A,I0,A,I0)') 'reduce_fortran: FAIL rank ', rank, ': ', what, &
          ' count ', n, ' root ', root, ' in-place ', inplace
    end if
  end subroutine check

end program reduce_fortran
