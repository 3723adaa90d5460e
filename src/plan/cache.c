/*
 * The process-wide plan cache, keyed by the problem, the weights' use and
 * the policy (see plan_key_t): a hashed table with least-recently-used
 * eviction; plans are reference counted, so evicting never frees a plan
 * in use.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

#define CACHE_CAPACITY 256

/* Everything a plan depends on, field by field (so that no padding byte
 * of a struct takes part): the problem, the weights' use, the policy. */
#define KEY_WORDS 192 /* the problem with 8 binary post-ops and the policy */
typedef struct plan_key {
    int64_t w[KEY_WORDS];
    int n;
} plan_key_t;

static void key_put(plan_key_t *k, int64_t v) { k->w[k->n++] = v; }

static void key_put_list(plan_key_t *k, const int64_t *v, int n) {
    for (int i = 0; i < n; i++) key_put(k, v[i]);
}

static void key_put_double(plan_key_t *k, double d) {
    int64_t v;
    memcpy(&v, &d, sizeof v);
    key_put(k, v);
}

static void key_make(plan_key_t *k, const dgrad_problem_t *p,
        int weights_constant, const dgrad_plan_policy_t *pol) {
    int ns = DGRAD_MAX_SPATIAL;
    k->n = 0;
    key_put(k, p->nsp);
    key_put(k, p->dt);
    key_put(k, p->N);
    key_put(k, p->G);
    key_put(k, p->Cin);
    key_put(k, p->Cout);
    key_put_list(k, p->X, ns);
    key_put_list(k, p->K, ns);
    key_put_list(k, p->S, ns);
    key_put_list(k, p->D, ns);
    key_put_list(k, p->PB, ns);
    key_put_list(k, p->Y, ns);
    key_put_list(k, p->in_strides, 2 + ns);
    key_put_list(k, p->wei_strides, 3 + ns);
    key_put_list(k, p->out_strides, 2 + ns);
    key_put(k, p->has_bias);
    key_put(k, p->bias_stride);
    key_put(k, p->n_post_ops);
    for (int i = 0; i < p->n_post_ops; i++) {
        const dgrad_post_op_t *po = &p->post_ops[i];
        key_put(k, po->alg);
        key_put_double(k, po->alpha);
        key_put_double(k, po->beta);
        if (!dgrad_post_alg_is_binary(po->alg)) continue;
        key_put(k, po->dt);
        key_put_list(k, po->dims, 2 + ns);
        key_put_list(k, po->strides, 2 + ns);
    }
    key_put(k, weights_constant);
    key_put(k, pol->layout_search);
    key_put(k, pol->threading);
    key_put_double(k, pol->max_bytes);
    key_put_double(k, pol->max_macs);
    key_put_double(k, pol->reduced_bytes);
    key_put_double(k, pol->reduced_macs);
    key_put_double(k, pol->min_macs);
    key_put(k, pol->chunk_bytes);
    key_put(k, pol->workspace_budget);
    key_put(k, pol->phase_fold);
    key_put(k, pol->own_loop);
    key_put(k, pol->own_kernels);
    key_put(k, pol->chain_pass);
    key_put(k, pol->stage_rows);
    key_put(k, pol->own_loop_kind);
    key_put(k, pol->spread_input);
    key_put(k, pol->projection);
    key_put(k, pol->small_copy);
}

static int key_equal(const plan_key_t *a, const plan_key_t *b) {
    return a->n == b->n && !memcmp(a->w, b->w, (size_t)a->n * sizeof a->w[0]);
}

/* Multiply-xorshift mix of the key's words: a few tens of nanoseconds. */
static uint64_t key_hash(const plan_key_t *k) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)k->n;
    for (int i = 0; i < k->n; i++) {
        h = (h ^ (uint64_t)k->w[i]) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    h ^= h >> 29;
    return h * 0xc4ceb9fe1a85ec53ull;
}

typedef struct cache_entry {
    dgrad_plan_t *plan; /* the cache's reference */
    plan_key_t key;
    uint64_t hash;      /* of the key */
    uint64_t last_use;
} cache_entry_t;

static struct {
    pthread_mutex_t lock;
    cache_entry_t entries[CACHE_CAPACITY];
    size_t count;
    uint64_t clock;
    size_t hits;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Index of the entry for @p key, or -1: hashes first, words to confirm.
 * Caller holds the lock. */
static int cache_find(const plan_key_t *key, uint64_t hash) {
    for (size_t i = 0; i < cache.count; i++)
        if (cache.entries[i].hash == hash
                && key_equal(&cache.entries[i].key, key))
            return (int)i;
    return -1;
}

/* Counts a hit and takes a new reference to entry @p i. Caller holds the
 * lock. */
static dgrad_plan_t *cache_use(int i) {
    cache.entries[i].last_use = ++cache.clock;
    cache.hits++;
    atomic_fetch_add(&cache.entries[i].plan->refs, 1);
    return cache.entries[i].plan;
}

/* Inserts @p plan (taking a reference for the cache) and returns the plan
 * it evicted, if any, for release outside the lock. Caller holds the lock.
 * Evicting only drops the cache's reference: holders keep their plans. */
static dgrad_plan_t *cache_insert(dgrad_plan_t *plan, const plan_key_t *key,
        uint64_t hash) {
    size_t slot = cache.count;
    dgrad_plan_t *victim = NULL;
    if (cache.count == CACHE_CAPACITY) {
        slot = 0;
        for (size_t i = 1; i < cache.count; i++)
            if (cache.entries[i].last_use < cache.entries[slot].last_use)
                slot = i;
        victim = cache.entries[slot].plan;
    } else {
        cache.count++;
    }
    atomic_fetch_add(&plan->refs, 1);
    cache.entries[slot].plan = plan;
    cache.entries[slot].key = *key;
    cache.entries[slot].hash = hash;
    cache.entries[slot].last_use = ++cache.clock;
    return victim;
}

void dgrad_plan_cache_clear(void) {
    cache_entry_t entries[CACHE_CAPACITY];
    pthread_mutex_lock(&cache.lock);
    size_t n = cache.count;
    memcpy(entries, cache.entries, n * sizeof entries[0]);
    cache.count = 0;
    pthread_mutex_unlock(&cache.lock);
    for (size_t i = 0; i < n; i++) dgrad_plan_release(entries[i].plan);
}

void cache_clear_at_exit(void) {
    dgrad_plan_cache_clear();
    /* Plans a caller still holds keep using the engine. */
    if (atomic_load(&live_plans) == 0 && engine) {
        dnnl_engine_destroy(engine);
        engine = NULL;
    }
}

dgrad_status_t dgrad_plan_get(const dgrad_problem_t *problem,
        dgrad_weights_use_t weights, const dgrad_plan_policy_t *policy,
        dgrad_plan_t **plan) {
    if (!problem || !policy || !plan)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_plan_get: problem, policy and plan must not be NULL");
    dgrad_status_t st = check_problem(problem);
    if (st != dgrad_success) return st;
    dnnl_status_t es = engine_init();
    if (es != dnnl_success)
        return dnnl_fail(problem, es, "CPU engine creation");

    int weights_constant = weights == dgrad_weights_constant;
    plan_key_t key;
    key_make(&key, problem, weights_constant, policy);
    uint64_t hash = key_hash(&key);
    pthread_mutex_lock(&cache.lock);
    int i = cache_find(&key, hash);
    dgrad_plan_t *found = i >= 0 ? cache_use(i) : NULL;
    pthread_mutex_unlock(&cache.lock);
    if (found) {
        *plan = found;
        return dgrad_success;
    }
    /* Create outside the lock (it can take milliseconds); another thread
     * may have inserted the same problem meanwhile: then keep theirs. */
    dgrad_plan_t *fresh = NULL, *victim = NULL;
    st = plan_create(problem, policy, weights_constant, &fresh);
    if (st != dgrad_success) return st;
    pthread_mutex_lock(&cache.lock);
    i = cache_find(&key, hash);
    if (i >= 0) {
        found = cache_use(i);
    } else {
        victim = cache_insert(fresh, &key, hash);
        found = fresh;
        fresh = NULL;
    }
    pthread_mutex_unlock(&cache.lock);
    dgrad_plan_release(fresh);
    dgrad_plan_release(victim);
    *plan = found;
    return dgrad_success;
}

void dgrad_plan_release(dgrad_plan_t *plan) {
    if (plan && atomic_fetch_sub(&plan->refs, 1) == 1) plan_destroy(plan);
}

size_t dgrad_plan_cache_size(void) {
    pthread_mutex_lock(&cache.lock);
    size_t n = cache.count;
    pthread_mutex_unlock(&cache.lock);
    return n;
}

size_t dgrad_plan_cache_hits(void) {
    pthread_mutex_lock(&cache.lock);
    size_t n = cache.hits;
    pthread_mutex_unlock(&cache.lock);
    return n;
}

const char *dgrad_plan_impl_name(const dgrad_plan_t *plan) {
    return plan ? plan->impl : "none";
}
