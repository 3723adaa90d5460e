/*
 * Control of the fault-injection build (see alloc.h): tests arm the Nth
 * acquisition to fail, run an operation, and read whether it fired. In
 * the fault build of the plugin these are exported next to the entry
 * symbol so that a host test can reach them through dlsym().
 */
#ifndef DGRAD_FAULT_INJECTION_H
#define DGRAD_FAULT_INJECTION_H

#define DGRAD_FAULT_API __attribute__((visibility("default")))

/* Arms the @p n-th acquisition from now to fail, once; 0 disarms. Resets
 * the count. */
DGRAD_FAULT_API void dgrad_fault_arm(long n);
/* Acquisitions counted since the last dgrad_fault_arm(). */
DGRAD_FAULT_API long dgrad_fault_count(void);
/* Whether the armed acquisition has failed. */
DGRAD_FAULT_API int dgrad_fault_fired(void);
/* Empties the plan cache, so that the next compile plans afresh. */
DGRAD_FAULT_API void dgrad_fault_reset_caches(void);

#endif
