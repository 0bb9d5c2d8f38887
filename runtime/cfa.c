// SPDX-License-Identifier: MIT
#include "cfa.h"

#include <errno.h>
#include <stdlib.h>

#include "ehframe.h"

struct dacce_cfa {
	struct dacce_eh_frame tables;
};

struct dacce_cfa *dacce_cfa_open(const struct dacce_module_info *m)
{
	struct dacce_eh_frame tables;
	struct dacce_cfa *cfa;

	/* The tables are read where the module maps them: no file, no copy. */
	if (!m->eh_frame_hdr.start ||
	    dacce_eh_frame_init(&tables, m->eh_frame_hdr.start, m->unwind_readable.start,
				m->unwind_readable.end) != 0)
		return NULL;
	cfa = malloc(sizeof(*cfa));
	if (cfa)
		cfa->tables = tables;
	return cfa;
}

void dacce_cfa_close(struct dacce_cfa *cfa)
{
	free(cfa);
}

/* %rsp + 8: the return address on top, no frame of the function's own. */
static int frameless(const struct dacce_cfa_row *row)
{
	return row->cfa_reg == 7 && row->cfa_offset == 8;
}

int dacce_cfa_is_frameless_at(const struct dacce_cfa *cfa, uintptr_t addr)
{
	struct dacce_cfa_row row;
	uintptr_t lo, hi;

	if (!cfa || dacce_eh_frame_row(&cfa->tables, addr, &row, &lo, &hi) != 0)
		return -1;
	return frameless(&row);
}

struct dacce_eh_frame_walk *dacce_cfa_walk_new(const struct dacce_cfa *cfa)
{
	return cfa ? dacce_eh_frame_walk_new(&cfa->tables) : NULL;
}

void dacce_cfa_walk_free(struct dacce_eh_frame_walk *walk)
{
	dacce_eh_frame_walk_free(walk);
}

int dacce_cfa_walk_is_frameless_at(struct dacce_eh_frame_walk *walk, uintptr_t addr)
{
	struct dacce_cfa_row row;
	uintptr_t lo, hi;

	if (!walk || dacce_eh_frame_walk_row(walk, addr, &row, &lo, &hi) != 0)
		return -1;
	return frameless(&row);
}

int dacce_cfa_rule_at(const struct dacce_cfa *cfa, uintptr_t addr, int *reg, int64_t *offset)
{
	struct dacce_cfa_row row;
	uintptr_t lo, hi;
	int err;

	if (!cfa)
		return -ENOENT;
	err = dacce_eh_frame_row(&cfa->tables, addr, &row, &lo, &hi);
	if (err == -ENOTSUP)
		return err;
	if (err)
		return -ENOENT;
	*reg = row.cfa_reg;
	*offset = row.cfa_offset;
	return 0;
}

/* A row as the callers of dacce_cfa_row_at want it, from what the tables said. */
static int usable_row(int err, const struct dacce_cfa_row *row)
{
	if (err == -EINVAL)
		return -ENOENT;
	if (err)
		return err;
	/* Without the return address nothing above the frame can be found. */
	return row->regs[DACCE_CFA_REGS - 1].kind == DACCE_CFA_AT ? 0 : -ENOTSUP;
}

int dacce_cfa_row_at(const struct dacce_cfa *cfa, uintptr_t addr, struct dacce_cfa_row *row,
		     uintptr_t *lo, uintptr_t *hi)
{
	if (!cfa)
		return -ENOENT;
	return usable_row(dacce_eh_frame_row(&cfa->tables, addr, row, lo, hi), row);
}

int dacce_cfa_walk_row_at(struct dacce_eh_frame_walk *walk, uintptr_t addr,
			  struct dacce_cfa_row *row, uintptr_t *lo, uintptr_t *hi)
{
	if (!walk)
		return -ENOENT;
	return usable_row(dacce_eh_frame_walk_row(walk, addr, row, lo, hi), row);
}
