// SPDX-License-Identifier: MIT
/* The runtime's end of the control channel (see control.h). */
#include "control.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "dacce_control.h"
#include "env.h"
#include "keptfd.h"
#include "rt.h"
#include "rt_state.h"
#include "tls.h"

/* A sampled hit stands for many calls: the counters it competes with count every push. */
#define HINT_SCALE 1000u

static int control_fd = -1;
static char control_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

void dacce_control_configure(void)
{
	const char *path = dacce_env("DACCE_CONTROL");

	if (path && strlen(path) < sizeof(control_path))
		strcpy(control_path, path);
}

bool dacce_control_connect(void)
{
	const char *path = control_path;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct dacce_control_hello hello = {
		.h = { DACCE_CONTROL_MAGIC, DACCE_CONTROL_VERSION, DACCE_CONTROL_HELLO },
		.pid = (uint32_t)getpid(),
		.tls_layout_version = DACCE_TLS_LAYOUT_VERSION,
	};
	int fd;

	if (!path || !*path || strlen(path) >= sizeof(addr.sun_path))
		return false;
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	fd = dacce_fd_move_high(fd); /* out of the way of the program's numbers (keptfd.h) */
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) != sizeof(hello)) {
		dacce_rt_log(false, "no controller at %s: %s; re-encoding by the built-in policy",
			     path, strerror(errno));
		close(fd);
		return false;
	}
	control_fd = fd;
	dacce_rt_log(false, "re-encoding driven by the controller at %s", path);
	return true;
}

bool dacce_control_attached(void)
{
	return control_fd >= 0;
}

bool dacce_control_wait(long ms)
{
	struct pollfd channel = { .fd = control_fd, .events = POLLIN };

	if (control_fd < 0)
		return false;
	return poll(&channel, 1, (int)ms) > 0;
}

static void detach(void)
{
	close(control_fd);
	control_fd = -1;
	dacce_rt_log(false, "controller gone; re-encoding by the built-in policy");
}

static void apply_hints(const struct dacce_control_epoch *req, size_t len)
{
	uint32_t n = req->n_hints;
	sigset_t saved;

	if (n > DACCE_CONTROL_MAX_HINTS || len < sizeof(*req) + (size_t)n * sizeof(req->hints[0]))
		return;
	rt_lock(&saved);
	for (uint32_t i = 0; i < n; i++) {
		const struct dacce_control_hint *hint = &req->hints[i];

		if (hint->edge < rt.graph->n_edges)
			rt.graph->edges[hint->edge].freq += (uint64_t)hint->samples * HINT_SCALE;
	}
	rt_unlock(&saved);
}

bool dacce_control_take_request(void)
{
	size_t cap = sizeof(struct dacce_control_epoch) +
		     DACCE_CONTROL_MAX_HINTS * sizeof(struct dacce_control_hint);
	struct dacce_control_epoch *req;
	bool asked = false;
	ssize_t n;

	if (control_fd < 0)
		return false;
	req = malloc(cap);
	if (!req)
		return false;
	/* Several requests queued mean one epoch, with every hint. */
	while ((n = recv(control_fd, req, cap, MSG_DONTWAIT)) != 0) {
		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				detach();
			break;
		}
		if ((size_t)n < sizeof(*req) || req->h.magic != DACCE_CONTROL_MAGIC ||
		    req->h.version != DACCE_CONTROL_VERSION || req->h.type != DACCE_CONTROL_EPOCH)
			continue; /* not for us: ignored, as later versions may add messages */
		apply_hints(req, (size_t)n);
		asked = true;
	}
	if (n == 0)
		detach();
	free(req);
	return asked;
}

void dacce_control_done(int result, uint64_t epoch)
{
	struct dacce_control_done done = {
		.h = { DACCE_CONTROL_MAGIC, DACCE_CONTROL_VERSION, DACCE_CONTROL_DONE },
		.result = result,
		.epoch = epoch,
	};

	if (control_fd >= 0 && send(control_fd, &done, sizeof(done), MSG_NOSIGNAL) < 0 &&
	    errno != EAGAIN)
		detach();
}

void dacce_control_forget(void)
{
	if (control_fd >= 0)
		close(control_fd);
	control_fd = -1;
}
