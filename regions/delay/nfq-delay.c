/*
 * nfq-delay: the link of one emulated region where the kernel has no netem. Holds every packet
 * for the link's one-way delay (plus jitter), loses a share of them, then accepts the rest.
 *
 * iptables sends the region's outgoing link traffic to queue N and its incoming traffic to queue
 * N+1 (`-j NFQUEUE --queue-num N --queue-bypass`); this program takes each packet's id as it
 * arrives and gives the verdict DROP at once for a lost packet, ACCEPT for the others once their
 * time has come. Within a flow (addresses, protocol and ports) a packet never leaves before the
 * one ahead of it, so jitter never reorders a TCP stream, as on a real path where delay varies
 * with queueing; packets of different flows may pass each other. A min-heap per direction holds
 * the schedule. Only the first bytes of a packet are copied (enough for its headers), never
 * payloads.
 *
 * Loss and jitter are drawn from seeded streams (splitmix64), one per direction and kind of
 * packet: connection-opening packets (TCP SYN and SYN-ACK) draw from streams of their own, so the
 * k-th connection attempt of a run meets the same fate (lost or not, and its delay) under the
 * same seed, whatever else the client sends in between. Every packet draws twice (loss, then
 * jitter) whether or not either is on, so changing one setting keeps the other's draws.
 *
 *   nfq-delay --queue N --delay-us US [--jitter-us US] [--loss-out PPM] [--loss-in PPM]
 *             [--seed N] [--max-held PACKETS]
 *
 * delay: the one-way delay; jitter: each packet's delay is delay + (draw - 0.5) x jitter, never
 * below 0; loss: parts per million lost, out = towards the link, in = from it.
 *
 * Prints "ready" on stdout once bound to both queues. Exits (accepting what it still holds) on
 * SIGINT/SIGTERM or, when stdin is a pipe, when the pipe closes: started with a pipe on stdin,
 * it never outlives the process that started it. On exit prints on stderr per direction how many
 * packets it held, lost (and of those, connection-opening ones) and dropped for want of room,
 * and how late they left on average and at worst.
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

/* Enough of a packet for its addresses, protocol, ports and TCP flags behind an IPv4 header with
 * options (60 bytes) or an IPv6 header (40). */
#define COPY_BYTES 80
/* Flows are told apart by a hash into this many slots; two flows in one slot keep each other's
 * order, which costs nothing but a little jitter. */
#define FLOW_SLOTS 4096

enum { OUT, IN, DIRECTIONS };
enum { OPENING, OTHER, KINDS };
static const char *const DIRECTION_NAME[DIRECTIONS] = { "out", "in" };

struct held {
	uint64_t release_ns;
	uint32_t id;
};

struct direction {
	struct nfq_q_handle *qh;
	/* A min-heap by release time, then id (arrival order). */
	struct held *heap;
	size_t len;
	/* When the last packet of each flow slot leaves. */
	uint64_t flow_release_ns[FLOW_SLOTS];
	uint32_t loss_ppm;
	uint64_t stream[KINDS];
	unsigned long long held, lost, lost_opening, dropped;
	/* How late packets left compared with their release time: the helper's own jitter. */
	unsigned long long late_sum_ns, late_max_ns, late_over_200us, released;
};

struct headers {
	/* TCP with SYN set: a SYN or a SYN-ACK. */
	int opening;
	uint32_t flow;
};

static struct direction directions[DIRECTIONS];
static size_t max_held;
static uint64_t delay_ns, jitter_ns;
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

/* splitmix64: small, fast and good enough for loss and jitter draws; any seed is a good one. */
static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A uniform draw in [0, 1). */
static double draw(uint64_t *state)
{
	return (double)(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

static uint32_t fnv1a(uint32_t hash, const unsigned char *bytes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		hash = (hash ^ bytes[i]) * 16777619u;
	return hash;
}

/* Reads the flow (addresses, protocol, ports) and the TCP flags from the copied headers. */
static struct headers read_headers(struct nfq_data *nfa)
{
	struct headers h = { 0, 0 };
	unsigned char *p;
	int len = nfq_get_payload(nfa, &p);
	unsigned char proto;
	int l4;
	uint32_t hash = 2166136261u;
	if (len >= 20 && p[0] >> 4 == 4) {
		proto = p[9];
		l4 = (p[0] & 0x0f) * 4;
		hash = fnv1a(hash, p + 12, 8);
	} else if (len >= 40 && p[0] >> 4 == 6) {
		proto = p[6];
		l4 = 40;
		hash = fnv1a(hash, p + 8, 32);
	} else {
		return h;
	}
	hash = fnv1a(hash, &proto, 1);
	if ((proto == IPPROTO_TCP || proto == IPPROTO_UDP) && len >= l4 + 4)
		hash = fnv1a(hash, p + l4, 4);
	h.flow = hash;
	h.opening = proto == IPPROTO_TCP && len > l4 + 13 && (p[l4 + 13] & 0x02);
	return h;
}

static int earlier(const struct held *a, const struct held *b)
{
	return a->release_ns < b->release_ns || (a->release_ns == b->release_ns && a->id < b->id);
}

static void heap_push(struct direction *d, struct held item)
{
	size_t i = d->len++;
	while (i > 0 && earlier(&item, &d->heap[(i - 1) / 2])) {
		d->heap[i] = d->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	d->heap[i] = item;
}

static struct held heap_pop(struct direction *d)
{
	struct held top = d->heap[0], last = d->heap[--d->len];
	size_t i = 0;
	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= d->len)
			break;
		if (child + 1 < d->len && earlier(&d->heap[child + 1], &d->heap[child]))
			child++;
		if (!earlier(&d->heap[child], &last))
			break;
		d->heap[i] = d->heap[child];
		i = child;
	}
	if (d->len > 0)
		d->heap[i] = last;
	return top;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *data)
{
	(void)msg;
	struct direction *d = data;
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
	if (!ph)
		return 0;
	uint32_t id = ntohl(ph->packet_id);
	struct headers h = read_headers(nfa);
	uint64_t *stream = &d->stream[h.opening ? OPENING : OTHER];
	double loss_draw = draw(stream);
	double jitter_draw = draw(stream);
	if (loss_draw * 1e6 < d->loss_ppm) {
		d->lost++;
		d->lost_opening += h.opening;
		return nfq_set_verdict(qh, id, NF_DROP, 0, NULL);
	}
	if (d->len == max_held) {
		/* A full queue drops, as a router's full buffer would. */
		d->dropped++;
		return nfq_set_verdict(qh, id, NF_DROP, 0, NULL);
	}
	int64_t delay = (int64_t)delay_ns + (int64_t)((jitter_draw - 0.5) * (double)jitter_ns);
	uint64_t release = now_ns() + (uint64_t)(delay > 0 ? delay : 0);
	uint64_t *flow_release = &d->flow_release_ns[h.flow % FLOW_SLOTS];
	if (release < *flow_release)
		release = *flow_release;
	*flow_release = release;
	heap_push(d, (struct held){ release, id });
	d->held++;
	return 0;
}

/* Accepts every packet of a direction whose time has come. */
static void release_due(struct direction *d, uint64_t now)
{
	while (d->len > 0 && d->heap[0].release_ns <= now) {
		struct held due = heap_pop(d);
		uint64_t late = now - due.release_ns;
		d->late_sum_ns += late;
		if (late > d->late_max_ns)
			d->late_max_ns = late;
		if (late > 200000)
			d->late_over_200us++;
		d->released++;
		if (nfq_set_verdict(d->qh, due.id, NF_ACCEPT, 0, NULL) < 0)
			die("verdict");
	}
}

static void arm_timer(int tfd)
{
	struct itimerspec its = { 0 };
	uint64_t at = UINT64_MAX;
	for (int i = 0; i < DIRECTIONS; i++) {
		if (directions[i].len > 0 && directions[i].heap[0].release_ns < at)
			at = directions[i].heap[0].release_ns;
	}
	if (at != UINT64_MAX) {
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
	fprintf(stderr, "usage: nfq-delay --queue N --delay-us US [--jitter-us US] [--loss-out PPM] [--loss-in PPM] "
			"[--seed N] [--max-held PACKETS]\n");
	exit(2);
}

static struct nfq_q_handle *bind_queue(struct nfq_handle *h, long queue, struct direction *d)
{
	struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)queue, on_packet, d);
	if (!qh)
		die("nfq_create_queue (is another program bound to this queue?)");
	if (nfq_set_mode(qh, NFQNL_COPY_PACKET, COPY_BYTES) < 0)
		die("nfq_set_mode");
	if (nfq_set_queue_maxlen(qh, (uint32_t)max_held) < 0)
		die("nfq_set_queue_maxlen");
	/* GSO packets are queued whole instead of being segmented first: less work per byte. */
	nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);
	return qh;
}

int main(int argc, char **argv)
{
	long long queue = -1, delay_us = -1, jitter_us = 0, max_packets = 65536, seed = 1;
	long long loss_ppm[DIRECTIONS] = { 0, 0 };
	for (int i = 1; i + 1 < argc; i += 2) {
		char *end;
		long long value = strtoll(argv[i + 1], &end, 10);
		if (*end != '\0' || value < 0)
			usage();
		if (strcmp(argv[i], "--queue") == 0)
			queue = value;
		else if (strcmp(argv[i], "--delay-us") == 0)
			delay_us = value;
		else if (strcmp(argv[i], "--jitter-us") == 0)
			jitter_us = value;
		else if (strcmp(argv[i], "--loss-out") == 0)
			loss_ppm[OUT] = value;
		else if (strcmp(argv[i], "--loss-in") == 0)
			loss_ppm[IN] = value;
		else if (strcmp(argv[i], "--seed") == 0)
			seed = value;
		else if (strcmp(argv[i], "--max-held") == 0)
			max_packets = value;
		else
			usage();
	}
	if (argc % 2 != 1 || queue < 0 || queue > 65534 || delay_us < 0 || max_packets < 1 || loss_ppm[OUT] > 1000000 ||
	    loss_ppm[IN] > 1000000)
		usage();
	delay_ns = (uint64_t)delay_us * 1000ull;
	jitter_ns = (uint64_t)jitter_us * 1000ull;
	max_held = (size_t)max_packets;
	for (int i = 0; i < DIRECTIONS; i++) {
		struct direction *d = &directions[i];
		d->heap = calloc(max_held, sizeof *d->heap);
		if (!d->heap)
			die("calloc");
		d->loss_ppm = (uint32_t)loss_ppm[i];
		for (int k = 0; k < KINDS; k++) {
			/* One stream per direction and kind, each from the seed and its own number. */
			uint64_t mix = (uint64_t)seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(1 + i * KINDS + k));
			d->stream[k] = splitmix64(&mix);
		}
	}

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
	directions[OUT].qh = bind_queue(h, queue, &directions[OUT]);
	directions[IN].qh = bind_queue(h, queue + 1, &directions[IN]);

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
		uint64_t now = now_ns();
		for (int i = 0; i < DIRECTIONS; i++)
			release_due(&directions[i], now);
		arm_timer(tfd);
	}

	for (int i = 0; i < DIRECTIONS; i++) {
		struct direction *d = &directions[i];
		fprintf(stderr,
			"nfq-delay: %s: held %llu lost %llu (connection-opening %llu) dropped %llu late avg %llu us max %llu us "
			"over 200 us %llu\n",
			DIRECTION_NAME[i], d->held, d->lost, d->lost_opening, d->dropped,
			d->released ? d->late_sum_ns / d->released / 1000 : 0, d->late_max_ns / 1000, d->late_over_200us);
		/* Closing the queue would drop what it still holds; let it through instead. */
		if (d->len > 0)
			release_due(d, UINT64_MAX);
		nfq_destroy_queue(d->qh);
	}
	nfq_close(h);
	return 0;
}
