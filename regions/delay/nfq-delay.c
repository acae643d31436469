/*
 * nfq-delay: holds every packet of one NFQUEUE queue for a fixed time, then accepts it.
 *
 * The emulated regions use it where the kernel has no netem. iptables sends a region's link
 * traffic to the queue (`-j NFQUEUE --queue-num N --queue-bypass`); this program takes each
 * packet's id as it arrives and gives the verdict ACCEPT once the delay has passed. Every packet
 * gets the same delay, so release times follow arrival order: a FIFO ring is the whole schedule,
 * and packet order is kept. Only metadata is copied (NFQNL_COPY_META), never payloads.
 *
 *   nfq-delay --queue N --delay-us MICROSECONDS [--max-held PACKETS]
 *
 * Prints "ready" on stdout once bound to the queue. Exits (accepting what it still holds) on
 * SIGINT/SIGTERM or, when stdin is a pipe, when the pipe closes: started with a pipe on stdin,
 * it never outlives the process that started it. On exit prints on stderr how many packets it
 * held and dropped, and how late they left on average and at worst.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

struct held {
	uint32_t id;
	uint64_t release_ns;
};

static struct held *ring;
static size_t ring_cap, ring_head, ring_len;
static uint64_t delay_ns;
static unsigned long long total_held, total_dropped;
/* How late packets left compared with their release time: the helper's own jitter. */
static unsigned long long late_sum_ns, late_max_ns, late_over_200us;
static volatile sig_atomic_t stopping;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "nfq-delay: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *data)
{
	(void)msg;
	(void)data;
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
	if (!ph)
		return 0;
	uint32_t id = ntohl(ph->packet_id);
	if (ring_len == ring_cap) {
		/* A full queue drops, as a router's full buffer would. */
		total_dropped++;
		return nfq_set_verdict(qh, id, NF_DROP, 0, NULL);
	}
	ring[(ring_head + ring_len) % ring_cap] = (struct held){ id, now_ns() + delay_ns };
	ring_len++;
	total_held++;
	return 0;
}

/* Accepts every packet whose time has come; ids grow with arrival, so one batch verdict
 * covers the due prefix of the ring. */
static void release_due(struct nfq_q_handle *qh, uint64_t now)
{
	uint32_t last = 0;
	int any = 0;
	while (ring_len > 0 && ring[ring_head].release_ns <= now) {
		uint64_t late = now - ring[ring_head].release_ns;
		late_sum_ns += late;
		if (late > late_max_ns)
			late_max_ns = late;
		if (late > 200000)
			late_over_200us++;
		last = ring[ring_head].id;
		any = 1;
		ring_head = (ring_head + 1) % ring_cap;
		ring_len--;
	}
	if (any && nfq_set_verdict_batch(qh, last, NF_ACCEPT) < 0)
		die("verdict");
}

static void arm_timer(int tfd)
{
	struct itimerspec its = { 0 };
	if (ring_len > 0) {
		uint64_t at = ring[ring_head].release_ns;
		its.it_value.tv_sec = (time_t)(at / 1000000000ull);
		its.it_value.tv_nsec = (long)(at % 1000000000ull);
	}
	if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		die("timerfd_settime");
}

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: nfq-delay --queue N --delay-us MICROSECONDS [--max-held PACKETS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long queue = -1, delay_us = -1, max_held = 65536;
	for (int i = 1; i + 1 < argc; i += 2) {
		char *end;
		long value = strtol(argv[i + 1], &end, 10);
		if (*end != '\0' || value < 0)
			usage();
		if (strcmp(argv[i], "--queue") == 0)
			queue = value;
		else if (strcmp(argv[i], "--delay-us") == 0)
			delay_us = value;
		else if (strcmp(argv[i], "--max-held") == 0)
			max_held = value;
		else
			usage();
	}
	if (argc % 2 != 1 || queue < 0 || queue > 65535 || delay_us < 0 || max_held < 1)
		usage();
	delay_ns = (uint64_t)delay_us * 1000ull;
	ring_cap = (size_t)max_held;
	ring = calloc(ring_cap, sizeof *ring);
	if (!ring)
		die("calloc");

	/* Default timer slack (50 us) would be jitter added to every packet; a real-time priority
	 * keeps a busy CPU from making packets late (the loop only ever blocks in poll). */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	struct sched_param rt = { .sched_priority = 10 };
	if (sched_setscheduler(0, SCHED_FIFO, &rt) < 0)
		fprintf(stderr, "nfq-delay: no real-time priority (%s); delays may be later under load\n", strerror(errno));
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct nfq_handle *h = nfq_open();
	if (!h)
		die("nfq_open");
	struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
	if (!qh)
		die("nfq_create_queue (is another program bound to this queue?)");
	if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0)
		die("nfq_set_mode");
	if (nfq_set_queue_maxlen(qh, (uint32_t)max_held) < 0)
		die("nfq_set_queue_maxlen");
	/* GSO packets are queued whole instead of being segmented first: less work per byte. */
	nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);

	int fd = nfq_fd(h);
	nfnl_rcvbufsiz(nfq_nfnlh(h), 16 << 20);
	int one = 1;
	setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (tfd < 0)
		die("timerfd_create");

	printf("ready\n");
	fflush(stdout);

	char buf[8192] __attribute__((aligned));
	struct stat st;
	int watch_stdin = fstat(STDIN_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
	struct pollfd fds[3] = {
		{ .fd = fd, .events = POLLIN },
		{ .fd = tfd, .events = POLLIN },
		{ .fd = STDIN_FILENO, .events = POLLIN },
	};
	while (!stopping) {
		if (poll(fds, watch_stdin ? 3 : 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (watch_stdin && (fds[2].revents & (POLLIN | POLLHUP | POLLERR))) {
			char sink[256];
			ssize_t n = read(STDIN_FILENO, sink, sizeof sink);
			if (n <= 0)
				break;
		}
		if (fds[1].revents & POLLIN) {
			uint64_t expirations;
			if (read(tfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
				die("read timerfd");
		}
		if (fds[0].revents & POLLIN) {
			for (;;) {
				ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
				if (n < 0) {
					if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
						break;
					if (errno == EINTR)
						continue;
					die("recv");
				}
				nfq_handle_packet(h, buf, (int)n);
			}
		}
		release_due(qh, now_ns());
		arm_timer(tfd);
	}

	unsigned long long released = total_held - ring_len;
	fprintf(stderr, "nfq-delay: held %llu dropped %llu late avg %llu us max %llu us over 200 us %llu\n", total_held,
		total_dropped, released ? late_sum_ns / released / 1000 : 0, late_max_ns / 1000, late_over_200us);
	/* Closing the queue would drop what it still holds; let it through instead. */
	if (ring_len > 0)
		release_due(qh, UINT64_MAX);
	nfq_destroy_queue(qh);
	nfq_close(h);
	return 0;
}
