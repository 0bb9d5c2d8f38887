// SPDX-License-Identifier: MIT
/* The controller's end of the control channel (see control.h). */
#include "control.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct connection {
	int fd;
	uint32_t pid; /* 0 until its hello */
};

struct dacce_control {
	int listen_fd;
	char dir[64];
	char path[96];
	struct connection *conns;
	size_t n_conns, cap_conns;
};

int dacce_control_listen(struct dacce_control **out)
{
	struct dacce_control *ctl = calloc(1, sizeof(*ctl));
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int err;

	*out = NULL;
	if (!ctl)
		return -ENOMEM;
	ctl->listen_fd = -1;
	/* A directory of our own: nobody else can put a socket where runtimes will connect. */
	snprintf(ctl->dir, sizeof(ctl->dir), "/tmp/dacce-XXXXXX");
	if (!mkdtemp(ctl->dir)) {
		err = -errno;
		ctl->dir[0] = 0;
		goto fail;
	}
	snprintf(ctl->path, sizeof(ctl->path), "%s/control", ctl->dir);
	ctl->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctl->listen_fd < 0) {
		err = -errno;
		goto fail;
	}
	memcpy(addr.sun_path, ctl->path, strlen(ctl->path) + 1);
	if (bind(ctl->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(ctl->listen_fd, 64) < 0) {
		err = -errno;
		goto fail;
	}
	*out = ctl;
	return 0;
fail:
	dacce_control_free(ctl);
	return err;
}

void dacce_control_free(struct dacce_control *ctl)
{
	if (!ctl)
		return;
	for (size_t i = 0; i < ctl->n_conns; i++)
		close(ctl->conns[i].fd);
	free(ctl->conns);
	if (ctl->listen_fd >= 0) {
		close(ctl->listen_fd);
		unlink(ctl->path);
	}
	if (ctl->dir[0])
		rmdir(ctl->dir);
	free(ctl);
}

const char *dacce_control_path(const struct dacce_control *ctl)
{
	return ctl->path;
}

static void drop(struct dacce_control *ctl, size_t i)
{
	close(ctl->conns[i].fd);
	ctl->conns[i] = ctl->conns[--ctl->n_conns];
}

static void accept_all(struct dacce_control *ctl)
{
	int fd;

	while ((fd = accept4(ctl->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (ctl->n_conns == ctl->cap_conns) {
			size_t cap = ctl->cap_conns ? ctl->cap_conns * 2 : 8;
			struct connection *grown = realloc(ctl->conns, cap * sizeof(*grown));

			if (!grown) {
				close(fd);
				continue;
			}
			ctl->conns = grown;
			ctl->cap_conns = cap;
		}
		ctl->conns[ctl->n_conns++] = (struct connection){ .fd = fd };
	}
}

/* Reads one connection's messages; false when it closed. */
static bool read_messages(struct connection *c,
			  void (*done)(void *arg, uint32_t pid, int result, uint64_t epoch),
			  void *arg)
{
	union {
		struct dacce_control_header h;
		struct dacce_control_hello hello;
		struct dacce_control_done done;
		uint8_t bytes[256];
	} msg;
	ssize_t n;

	while ((n = recv(c->fd, &msg, sizeof(msg), MSG_DONTWAIT)) > 0) {
		if ((size_t)n < sizeof(msg.h) || msg.h.magic != DACCE_CONTROL_MAGIC ||
		    msg.h.version != DACCE_CONTROL_VERSION)
			continue;
		if (msg.h.type == DACCE_CONTROL_HELLO && (size_t)n >= sizeof(msg.hello))
			c->pid = msg.hello.pid;
		else if (msg.h.type == DACCE_CONTROL_DONE && (size_t)n >= sizeof(msg.done) && done)
			done(arg, c->pid, msg.done.result, msg.done.epoch);
	}
	return n != 0 && (n > 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

void dacce_control_serve(struct dacce_control *ctl,
			 void (*done)(void *arg, uint32_t pid, int result, uint64_t epoch),
			 void *arg)
{
	accept_all(ctl);
	for (size_t i = 0; i < ctl->n_conns;) {
		if (read_messages(&ctl->conns[i], done, arg))
			i++;
		else
			drop(ctl, i);
	}
}

static struct connection *find(const struct dacce_control *ctl, uint32_t pid)
{
	/* The newest connection of a pid wins: an exec'd image says hello again. */
	for (size_t i = ctl->n_conns; i-- > 0;)
		if (ctl->conns[i].pid == pid)
			return &ctl->conns[i];
	return NULL;
}

int dacce_control_connected(const struct dacce_control *ctl, uint32_t pid)
{
	return find(ctl, pid) != NULL;
}

int dacce_control_request_epoch(struct dacce_control *ctl, uint32_t pid,
				const struct dacce_control_hint *hints, uint32_t n_hints)
{
	struct connection *c = find(ctl, pid);
	struct dacce_control_epoch *req;
	size_t len;
	int err = 0;

	if (!c)
		return -ENOTCONN;
	if (n_hints > DACCE_CONTROL_MAX_HINTS)
		n_hints = DACCE_CONTROL_MAX_HINTS;
	len = sizeof(*req) + (size_t)n_hints * sizeof(*hints);
	req = calloc(1, len);
	if (!req)
		return -ENOMEM;
	req->h = (struct dacce_control_header){ DACCE_CONTROL_MAGIC, DACCE_CONTROL_VERSION,
						DACCE_CONTROL_EPOCH };
	req->n_hints = n_hints;
	memcpy(req->hints, hints, (size_t)n_hints * sizeof(*hints));
	if (send(c->fd, req, len, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)len)
		err = -errno;
	free(req);
	return err;
}
