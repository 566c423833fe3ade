/*
 * The cheapest FUSE server there is, to measure what a request costs before any
 * server code runs: the kernel's and the machine's share of a round trip.
 *
 * bench_fuse.py builds it with gcc against libfuse 3 and times the same
 * uncached request (a getxattr answered ENODATA) against it and against the
 * workspacefs mount, in the same run. It serves the way the mount does: one
 * thread, a non-blocking FUSE fd polled for 50 us before it sleeps, and the
 * CPU latency hint held (where /dev/cpu_dma_latency can be opened), so the
 * difference between the two figures is the mount's Python side alone.
 *
 * Usage: fuse_floor MOUNTPOINT   (serves until unmounted; "/x" is an empty file)
 */
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#define POLL_NS 50000LL /* as the mount's POLL_NS */

static void attributes(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = ino == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0644;
	st->st_nlink = 1;
}

static void floor_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	attributes(ino, &st);
	fuse_reply_attr(req, &st, 300);
}

static void floor_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param entry;

	memset(&entry, 0, sizeof(entry));
	entry.entry_timeout = 300;
	if (parent == FUSE_ROOT_ID && strcmp(name, "x") == 0) {
		entry.ino = 2;
		entry.attr_timeout = 300;
		attributes(entry.ino, &entry.attr);
	}
	fuse_reply_entry(req, &entry);
}

static void floor_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	(void)ino;
	(void)name;
	(void)size;
	fuse_reply_err(req, ENODATA);
}

static const struct fuse_lowlevel_ops operations = {
	.lookup = floor_lookup,
	.getattr = floor_getattr,
	.getxattr = floor_getxattr,
};

static long long monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec * 1000000000LL + now.tv_nsec;
}

/* The mount's session loop (pyfuse3's, patched) without Python. */
static int serve(struct fuse_session *session)
{
	struct fuse_buf buf = {.mem = NULL};
	int fd = fuse_session_fd(session);
	int res = 0;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	while (!fuse_session_exited(session)) {
		res = fuse_session_receive_buf(session, &buf);
		if (res == -EAGAIN) {
			long long deadline = monotonic_ns() + POLL_NS;

			while (res == -EAGAIN && monotonic_ns() < deadline) {
				sched_yield();
				res = fuse_session_receive_buf(session, &buf);
			}
		}
		if (res == -EAGAIN) {
			struct pollfd readable = {.fd = fd, .events = POLLIN};

			poll(&readable, 1, -1);
			continue;
		}
		if (res == -EINTR)
			continue;
		if (res <= 0)
			break;
		fuse_session_process_buf(session, &buf);
	}
	free(buf.mem);
	return res == -ENODEV ? 0 : res; /* ENODEV: unmounted */
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	struct fuse_session *session;
	int hint, res;

	if (argc != 2) {
		fprintf(stderr, "usage: %s MOUNTPOINT\n", argv[0]);
		return 2;
	}
	hint = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
	if (hint >= 0) {
		int32_t zero = 0;

		if (write(hint, &zero, sizeof(zero)) != sizeof(zero))
			perror("cpu_dma_latency");
	}
	session = fuse_session_new(&args, &operations, sizeof(operations), NULL);
	if (session == NULL || fuse_session_mount(session, argv[1]) != 0)
		return 1;
	res = serve(session);
	fuse_session_unmount(session);
	fuse_session_destroy(session);
	return res ? 1 : 0;
}
