/*
 * The assertion every refusal test makes: the status, and a message that
 * names what it must (a substring), for the tests' Criterion binary.
 */
#ifndef DGRAD_TESTS_ASSERT_ERR_H
#define DGRAD_TESTS_ASSERT_ERR_H

#include <criterion/criterion.h>
#include <string.h>

#include "dgrad/dgrad.h"

#define ASSERT_ERR(expr, status, substring) \
    do { \
        dgrad_status_t st_ = (expr); \
        const char *m_ = dgrad_last_error_message(); \
        cr_assert_eq(st_, (status), "got %s, expected %s: '%s'", \
                dgrad_status_name(st_), dgrad_status_name(status), m_); \
        cr_assert(strstr(m_, (substring)), "message '%s' lacks '%s'", m_, \
                (substring)); \
    } while (0)

#endif
