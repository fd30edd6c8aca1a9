#define __NR_perf_event_open 241
#define __NR_pidfd_open 434
#define __NR_pidfd_getfd 438
