/* The fault-injection counter (see alloc.h and fault_injection.h). Linked
 * only into the fault tests' build. */
#include <stdatomic.h>

#include "alloc.h"
#include "fault_injection.h"
#include "onednn.h"

static atomic_long armed_at; /* 0: disarmed */
static atomic_long counted;
static atomic_int fired;

int dgrad_fault_hit(void) {
    long n = atomic_fetch_add(&counted, 1) + 1;
    if (n != atomic_load(&armed_at)) return 0;
    atomic_store(&fired, 1);
    return 1;
}

void dgrad_fault_arm(long n) {
    atomic_store(&armed_at, 0);
    atomic_store(&counted, 0);
    atomic_store(&fired, 0);
    atomic_store(&armed_at, n);
}

long dgrad_fault_count(void) { return atomic_load(&counted); }

int dgrad_fault_fired(void) { return atomic_load(&fired); }

void dgrad_fault_reset_caches(void) { dgrad_plan_cache_clear(); }
