#define __NR_perf_event_open 336
#define __NR_fsopen 430
#define __NR_fsconfig 431
#define __NR_fsmount 432
#define __NR_pidfd_open 434
#define __NR_pidfd_getfd 438
