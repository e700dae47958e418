/*
 * The C twins of the panama-verbs JMH benchmarks: the same operations, done by C, called once
 * through FFM with N iterations (per-operation time = total / N), plus the set-up of two
 * connected RC queue pairs that the C loops and the raw-bindings benchmarks share.
 *
 * Build: gcc -O2 -shared -fPIC -o libpvbench.so pvbench.c -libverbs
 */
#include <infiniband/verbs.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>

/* Two RC queue pairs on one device, connected to each other; each has its own CQ (send and
 * receive) and a registered buffer with remote write access. */
struct pvb_pair {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_mr *mr[2];
	struct ibv_cq_ex *cqx[2];  /* pvb_pair_open_ex: the extended CQs (cq[i] is their ibv_cq) */
	struct ibv_qp_ex *qpx[2];  /* pvb_pair_open_ex: the QPs' ibv_wr_* interface */
	struct ibv_comp_channel *ch[2];  /* pvb_pair_open_events: each CQ's own completion channel */
	char *buf[2];
	size_t size;
	unsigned char seq;  /* the last byte written by pvb_pingpong_write */
	int receives;        /* whether pvb_pingpong_send has posted its receives */
};

static char last_error[256];

/* The message of the last failed pvb_pair_open. */
const char *pvb_last_error(void) { return last_error; }

/* A no-op: what a downcall costs, in isolation. */
void pvb_noop(void) {}


static int fail(const char *what, int err)
{
	snprintf(last_error, sizeof last_error, "%s failed: %s", what, strerror(err));
	return -1;
}

static int to_rts(struct pvb_pair *p, int port, int gid_index, struct ibv_qp *qp, struct ibv_qp *peer)
{
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int rc;

	if ((rc = ibv_query_port(p->ctx, port, &pa)))
		return fail("ibv_query_port", rc);
	if ((rc = ibv_query_gid(p->ctx, port, gid_index, &gid)))
		return fail("ibv_query_gid", rc);

	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = port,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)))
		return fail("ibv_modify_qp(INIT)", rc);

	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = pa.active_mtu;
	a.dest_qp_num = peer->qp_num;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = port;
	a.ah_attr.dlid = pa.lid;
	if (pa.link_layer == IBV_LINK_LAYER_ETHERNET || gid_index > 0) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = gid;
		a.ah_attr.grh.sgid_index = gid_index;
		a.ah_attr.grh.hop_limit = 1;
	}
	if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN
			| IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)))
		return fail("ibv_modify_qp(RTR)", rc);

	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY
			| IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)))
		return fail("ibv_modify_qp(RTS)", rc);
	return 0;
}

void pvb_pair_close(struct pvb_pair *p);

/* Opens device `name`, and connects two RC QPs with `size`-byte buffers; `ex`: extended CQs
 * (ibv_create_cq_ex, standard fields) and QPs (ibv_create_qp_ex with RDMA write and send in
 * send_ops_flags); `events`: each CQ with a completion channel of its own. NULL on failure
 * (pvb_last_error says why). */
static struct pvb_pair *open_pair(const char *name, int port, int gid_index, long size, int max_inline, int ex,
				  int events)
{
	struct pvb_pair *p = calloc(1, sizeof *p);
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	if (!p || !list) {
		fail("ibv_get_device_list", ENOMEM);
		free(p);
		return NULL;
	}
	for (i = 0; list[i]; i++)
		if (!name || !*name || !strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (!list[i]) {
		snprintf(last_error, sizeof last_error, "no RDMA device %s", name ? name : "");
		ibv_free_device_list(list);
		free(p);
		return NULL;
	}
	p->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!p->ctx) {
		fail("ibv_open_device", errno);
		free(p);
		return NULL;
	}
	p->size = size;
	if (!(p->pd = ibv_alloc_pd(p->ctx))) {
		fail("ibv_alloc_pd", errno);
		goto bad;
	}
	for (i = 0; i < 2; i++) {
		if (ex) {
			struct ibv_cq_init_attr_ex ca = { .cqe = 1024, .wc_flags = IBV_WC_STANDARD_FLAGS };
			if (!(p->cqx[i] = ibv_create_cq_ex(p->ctx, &ca))) {
				fail("ibv_create_cq_ex", errno);
				goto bad;
			}
			p->cq[i] = ibv_cq_ex_to_cq(p->cqx[i]);
		} else if (events && !(p->ch[i] = ibv_create_comp_channel(p->ctx))) {
			fail("ibv_create_comp_channel", errno);
			goto bad;
		} else if (!(p->cq[i] = ibv_create_cq(p->ctx, 1024, NULL, p->ch[i], 0))) {
			fail("ibv_create_cq", errno);
			goto bad;
		}
		if (posix_memalign((void **) &p->buf[i], 4096, size)) {
			fail("posix_memalign", ENOMEM);
			goto bad;
		}
		memset(p->buf[i], 0, size);
		if (!(p->mr[i] = ibv_reg_mr(p->pd, p->buf[i], size,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ))) {
			fail("ibv_reg_mr", errno);
			goto bad;
		}
		struct ibv_qp_init_attr ia = {
			.send_cq = p->cq[i], .recv_cq = p->cq[i], .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 256, .max_recv_wr = 256, .max_send_sge = 1, .max_recv_sge = 1,
				 .max_inline_data = max_inline },
		};
		if (ex) {
			struct ibv_qp_init_attr_ex iax = {
				.send_cq = ia.send_cq, .recv_cq = ia.recv_cq, .qp_type = ia.qp_type, .cap = ia.cap,
				.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, .pd = p->pd,
				.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND,
			};
			if (!(p->qp[i] = ibv_create_qp_ex(p->ctx, &iax))) {
				fail("ibv_create_qp_ex", errno);
				goto bad;
			}
			p->qpx[i] = ibv_qp_to_qp_ex(p->qp[i]);
		} else if (!(p->qp[i] = ibv_create_qp(p->pd, &ia))) {
			fail("ibv_create_qp", errno);
			goto bad;
		}
	}
	if (to_rts(p, port, gid_index, p->qp[0], p->qp[1]) || to_rts(p, port, gid_index, p->qp[1], p->qp[0]))
		goto bad;
	return p;
bad:
	pvb_pair_close(p);
	return NULL;
}

struct pvb_pair *pvb_pair_open(const char *name, int port, int gid_index, long size, int max_inline)
{
	return open_pair(name, port, gid_index, size, max_inline, 0, 0);
}

/* As pvb_pair_open, each CQ with its own completion channel: what pvb_pingpong_event needs. */
struct pvb_pair *pvb_pair_open_events(const char *name, int port, int gid_index, long size, int max_inline)
{
	return open_pair(name, port, gid_index, size, max_inline, 0, 1);
}

/* As pvb_pair_open, with extended CQs and QPs: what the pvb_ex_* loops need. */
struct pvb_pair *pvb_pair_open_ex(const char *name, int port, int gid_index, long size, int max_inline)
{
	return open_pair(name, port, gid_index, size, max_inline, 1, 0);
}

void pvb_pair_close(struct pvb_pair *p)
{
	if (!p)
		return;
	for (int i = 1; i >= 0; i--) {
		if (p->qp[i])
			ibv_destroy_qp(p->qp[i]);
		if (p->mr[i])
			ibv_dereg_mr(p->mr[i]);
		if (p->cq[i])
			ibv_destroy_cq(p->cq[i]);
		if (p->ch[i])
			ibv_destroy_comp_channel(p->ch[i]);
		free(p->buf[i]);
	}
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	if (p->ctx)
		ibv_close_device(p->ctx);
	free(p);
}

/* Field `what` of the pair, as a number: 0 context, 1/2 CQ a/b, 3/4 QP a/b, 5/6 buffer a/b,
 * 7/8 lkey a/b, 9/10 rkey a/b. */
long pvb_pair_get(struct pvb_pair *p, int what)
{
	switch (what) {
	case 0: return (long) (uintptr_t) p->ctx;
	case 1: case 2: return (long) (uintptr_t) p->cq[what - 1];
	case 3: case 4: return (long) (uintptr_t) p->qp[what - 3];
	case 5: case 6: return (long) (uintptr_t) p->buf[what - 5];
	case 7: case 8: return p->mr[what - 7]->lkey;
	case 9: case 10: return p->mr[what - 9]->rkey;
	default: return -1;
	}
}

/* ibv_poll_cq on `cq`, n times; returns the number of completions found (0 on an empty CQ). */
long pvb_poll_empty(struct ibv_cq *cq, long n)
{
	struct ibv_wc wc[16];
	long found = 0;
	for (long i = 0; i < n; i++)
		found += ibv_poll_cq(cq, 16, wc);
	return found;
}

/* Polls `cq` until one completion arrives; 0 on success, -1 on a failed completion or poll. */
static int await_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int k;
	while ((k = ibv_poll_cq(cq, 1, wc)) == 0)
		;
	return k < 0 || wc->status != IBV_WC_SUCCESS ? -1 : 0;
}

/* n times: post a signaled `size`-byte RDMA write from QP a's buffer into b's, poll its completion.
 * Returns n, or -1 on an error. */
long pvb_write_poll(struct pvb_pair *p, long n, int size)
{
	struct ibv_sge sge = { .addr = (uintptr_t) p->buf[0], .length = size, .lkey = p->mr[0]->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t) p->buf[1], .rkey = p->mr[1]->rkey },
	}, *bad;
	struct ibv_wc wc;
	for (long i = 0; i < n; i++) {
		if (ibv_post_send(p->qp[0], &wr, &bad) || await_one(p->cq[0], &wc))
			return -1;
	}
	return n;
}

/* n times: post a chain of `batch` `size`-byte RDMA writes, only the last signaled, and poll its
 * completion. Returns n * batch, or -1. */
long pvb_write_batch(struct pvb_pair *p, long n, int batch, int size)
{
	struct ibv_sge sge = { .addr = (uintptr_t) p->buf[0], .length = size, .lkey = p->mr[0]->lkey };
	struct ibv_send_wr wr[64], *bad;
	struct ibv_wc wc;
	if (batch < 1 || batch > 64)
		return -1;
	memset(wr, 0, sizeof wr);
	for (int j = 0; j < batch; j++) {
		wr[j].wr_id = j;
		wr[j].sg_list = &sge;
		wr[j].num_sge = 1;
		wr[j].opcode = IBV_WR_RDMA_WRITE;
		wr[j].wr.rdma.remote_addr = (uintptr_t) p->buf[1] + (uint64_t) j * size;
		wr[j].wr.rdma.rkey = p->mr[1]->rkey;
		wr[j].next = j + 1 < batch ? &wr[j + 1] : NULL;
	}
	wr[batch - 1].send_flags = IBV_SEND_SIGNALED;
	for (long i = 0; i < n; i++) {
		if (ibv_post_send(p->qp[0], wr, &bad) || await_one(p->cq[0], &wc))
			return -1;
	}
	return n * batch;
}

/* The extended twins (a pvb_pair_open_ex pair). n times: ibv_start_poll on QP a's empty extended
 * CQ (ibv_end_poll after a completion, none expected); returns the completions found. */
long pvb_ex_poll_empty(struct pvb_pair *p, long n)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	long found = 0;
	for (long i = 0; i < n; i++) {
		if (ibv_start_poll(p->cqx[0], &attr) == 0) {
			found++;
			ibv_end_poll(p->cqx[0]);
		}
	}
	return found;
}

/* n times: a signaled `size`-byte RDMA write from a's buffer into b's through ibv_wr_start,
 * ibv_wr_rdma_write, ibv_wr_set_sge and ibv_wr_complete, then its completion read with
 * ibv_start_poll / ibv_end_poll. Returns n, or -1 on an error. */
long pvb_ex_write_poll(struct pvb_pair *p, long n, int size)
{
	struct ibv_qp_ex *qx = p->qpx[0];
	struct ibv_cq_ex *cx = p->cqx[0];
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	for (long i = 0; i < n; i++) {
		ibv_wr_start(qx);
		qx->wr_id = 1;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qx, p->mr[1]->rkey, (uintptr_t) p->buf[1]);
		ibv_wr_set_sge(qx, p->mr[0]->lkey, (uintptr_t) p->buf[0], size);
		if (ibv_wr_complete(qx))
			return -1;
		int rc;
		while ((rc = ibv_start_poll(cx, &attr)) == ENOENT)
			;
		if (rc)
			return -1;
		enum ibv_wc_status status = cx->status;
		ibv_end_poll(cx);
		if (status != IBV_WC_SUCCESS)
			return -1;
	}
	return n;
}

/* n round trips of `size`-byte RDMA writes, one thread playing both sides: a writes into b's
 * buffer, b spins on the last byte, then b writes into a's buffer and a spins (as ib_write_lat
 * does, with each side's send completion polled after the spin). Returns n, or -1. */
long pvb_pingpong_write(struct pvb_pair *p, long n, int size)
{
	struct ibv_sge sge[2];
	struct ibv_send_wr wr[2], *bad;
	struct ibv_wc wc;
	memset(wr, 0, sizeof wr);
	for (int s = 0; s < 2; s++) {
		sge[s] = (struct ibv_sge) { .addr = (uintptr_t) p->buf[s], .length = size, .lkey = p->mr[s]->lkey };
		wr[s].sg_list = &sge[s];
		wr[s].num_sge = 1;
		wr[s].opcode = IBV_WR_RDMA_WRITE;
		wr[s].send_flags = IBV_SEND_SIGNALED;
		wr[s].wr.rdma.remote_addr = (uintptr_t) p->buf[1 - s] + 4096;
		wr[s].wr.rdma.rkey = p->mr[1 - s]->rkey;
	}
	for (long i = 0; i < n; i++) {
		for (int s = 0; s < 2; s++) {
			volatile char *last = p->buf[1 - s] + 4096 + size - 1;
			char seq = (char) ++p->seq;
			p->buf[s][size - 1] = seq;
			if (ibv_post_send(p->qp[s], &wr[s], &bad))
				return -1;
			while (*last != seq)
				;
			if (await_one(p->cq[s], &wc))
				return -1;
		}
	}
	return n;
}

/* Checks k completions polled into wc: -1 if one failed, 1 if one of them is a receive, else 0. */
static int saw_receive(const struct ibv_wc *wc, int k)
{
	int got = 0;
	if (k < 0)
		return -1;
	for (int j = 0; j < k; j++) {
		if (wc[j].status != IBV_WC_SUCCESS)
			return -1;
		if (wc[j].opcode == IBV_WC_RECV)
			got = 1;
	}
	return got;
}

/* The send ping-pongs' requests: `size`-byte sends from the start of each side's buffer, receives
 * of up to 8 KiB at offset 8192. */
static void send_requests(struct pvb_pair *p, int size, struct ibv_sge *sge, struct ibv_sge *rsge,
			  struct ibv_send_wr *wr, struct ibv_recv_wr *rwr)
{
	memset(wr, 0, 2 * sizeof *wr);
	memset(rwr, 0, 2 * sizeof *rwr);
	for (int s = 0; s < 2; s++) {
		sge[s] = (struct ibv_sge) { .addr = (uintptr_t) p->buf[s], .length = size, .lkey = p->mr[s]->lkey };
		rsge[s] = (struct ibv_sge) { .addr = (uintptr_t) p->buf[s] + 8192, .length = 8192, .lkey = p->mr[s]->lkey };
		wr[s] = (struct ibv_send_wr) { .wr_id = 1, .sg_list = &sge[s], .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED };
		rwr[s] = (struct ibv_recv_wr) { .wr_id = 2, .sg_list = &rsge[s], .num_sge = 1 };
	}
}

/* n round trips of `size`-byte sends, one thread playing both sides (a sends, b receives and sends
 * back, a receives); one receive is always posted on each side (posted by the first call, for at
 * most 8 KiB). Returns n, or -1. */
long pvb_pingpong_send(struct pvb_pair *p, long n, int size)
{
	struct ibv_sge sge[2], rsge[2];
	struct ibv_send_wr wr[2], *bad;
	struct ibv_recv_wr rwr[2], *rbad;
	struct ibv_wc wc[4];
	send_requests(p, size, sge, rsge, wr, rwr);
	for (int s = 0; s < 2; s++)
		if (!p->receives && ibv_post_recv(p->qp[s], &rwr[s], &rbad))
			return -1;
	p->receives = 1;
	for (long i = 0; i < n; i++) {
		for (int s = 0; s < 2; s++) {
			if (ibv_post_send(p->qp[s], &wr[s], &bad))
				return -1;
			/* the peer waits for its receive (consuming send completions on the way) */
			int got;
			while (!(got = saw_receive(wc, ibv_poll_cq(p->cq[1 - s], 4, wc))))
				;
			if (got < 0)
				return -1;
			if (ibv_post_recv(p->qp[1 - s], &rwr[1 - s], &rbad))
				return -1;
		}
	}
	/* drain the last send completions */
	for (int s = 0; s < 2; s++)
		while (ibv_poll_cq(p->cq[s], 4, wc) > 0)
			;
	return n;
}

/* Waits for a receive completion on `cq` through its channel `ch` as an event-driven C program does,
 * in the order CompletionQueue.await follows: poll; if empty, ibv_req_notify_cq and poll again; if
 * still empty, block in ibv_get_cq_event (as ibv_rc_pingpong -e does), ibv_ack_cq_events, poll. Send
 * completions met on the way are consumed. 0, or -1 on a failed verb or completion. */
static int await_receive_event(struct ibv_cq *cq, struct ibv_comp_channel *ch)
{
	struct ibv_wc wc[4];
	int got = 0;
	while (!got) {
		int k = ibv_poll_cq(cq, 4, wc);
		if (k == 0) {
			if (ibv_req_notify_cq(cq, 0))
				return -1;
			k = ibv_poll_cq(cq, 4, wc);
			if (k == 0) {
				struct ibv_cq *ev_cq;
				void *ev_ctx;
				if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
					return -1;
				ibv_ack_cq_events(ev_cq, 1);
				k = ibv_poll_cq(cq, 4, wc);
			}
		}
		if ((got = saw_receive(wc, k)) < 0)
			return -1;
	}
	return 0;
}

/* send_requests, and one receive posted on each side. 0, or -1. */
static int event_requests(struct pvb_pair *p, int size, struct ibv_sge *sge, struct ibv_sge *rsge,
			  struct ibv_send_wr *wr, struct ibv_recv_wr *rwr)
{
	struct ibv_recv_wr *rbad;
	send_requests(p, size, sge, rsge, wr, rwr);
	for (int s = 0; s < 2; s++)
		if (ibv_post_recv(p->qp[s], &rwr[s], &rbad))
			return -1;
	return 0;
}

/* The echo side of the event-driven ping-pong, on its own thread: b waits for each receive through
 * its channel, reposts it and sends back, until pvb_event_echo_stop. */
struct pvb_echo {
	struct pvb_pair *p;
	pthread_t thread;
	volatile int stop;
	int failed;
	struct ibv_sge sge[2], rsge[2];
	struct ibv_send_wr wr[2];
	struct ibv_recv_wr rwr[2];
};

static void *echo_main(void *arg)
{
	struct pvb_echo *e = arg;
	struct ibv_send_wr *bad;
	struct ibv_recv_wr *rbad;
	for (;;) {
		if (await_receive_event(e->p->cq[1], e->p->ch[1])) {
			e->failed = 1;
			return NULL;
		}
		if (e->stop)
			return NULL;
		if (ibv_post_recv(e->p->qp[1], &e->rwr[1], &rbad) || ibv_post_send(e->p->qp[1], &e->wr[1], &bad)) {
			e->failed = 1;
			return NULL;
		}
	}
}

/* Starts b's echo thread on a pair from pvb_pair_open_events, for `size`-byte messages; NULL on failure. */
struct pvb_echo *pvb_event_echo_start(struct pvb_pair *p, int size)
{
	struct pvb_echo *e = calloc(1, sizeof *e);
	if (!e)
		return NULL;
	e->p = p;
	if (event_requests(p, size, e->sge, e->rsge, e->wr, e->rwr) || pthread_create(&e->thread, NULL, echo_main, e)) {
		fail("pvb_event_echo_start", errno);
		free(e);
		return NULL;
	}
	return e;
}

/* n round trips against the echo thread: a sends, waits for the echo's reply through its channel
 * (await_receive_event: the thread sleeps in ibv_get_cq_event, as ibv_rc_pingpong -e does) and
 * reposts its receive. The C twin of EventPingPong. Returns n, or -1. */
long pvb_pingpong_event(struct pvb_echo *e, long n)
{
	struct ibv_send_wr *bad;
	struct ibv_recv_wr *rbad;
	for (long i = 0; i < n; i++) {
		if (ibv_post_send(e->p->qp[0], &e->wr[0], &bad) || await_receive_event(e->p->cq[0], e->p->ch[0])
				|| ibv_post_recv(e->p->qp[0], &e->rwr[0], &rbad) || e->failed)
			return -1;
	}
	return n;
}

/* Stops the echo thread (one last message wakes it) and frees it; 0, or -1 if the echo failed. */
int pvb_event_echo_stop(struct pvb_echo *e)
{
	struct ibv_send_wr *bad;
	int rc;
	e->stop = 1;
	if (ibv_post_send(e->p->qp[0], &e->wr[0], &bad))
		e->failed = 1;
	else
		pthread_join(e->thread, NULL);
	rc = e->failed ? -1 : 0;
	free(e);
	return rc;
}

/* n round trips of pvb_pingpong_write (kind 0) or pvb_pingpong_send (kind 1), each timed on its own
 * with CLOCK_MONOTONIC: ns[i] = the i-th round trip in nanoseconds (its two work requests are set up
 * inside, a few tens of ns). The C figure of the ping-pong rows: BenchMain calls it in its own JVM,
 * once, so that C gets a median like JMH's SampleTime gives Java, without a JMH fork per size.
 * Returns n, or -1. */
long pvb_pingpong_timed(struct pvb_pair *p, int kind, long n, int size, int64_t *ns)
{
	struct timespec a, b;
	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		long r = kind ? pvb_pingpong_send(p, 1, size) : pvb_pingpong_write(p, 1, size);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (r < 0)
			return -1;
		ns[i] = (int64_t) (b.tv_sec - a.tv_sec) * 1000000000 + (b.tv_nsec - a.tv_nsec);
	}
	return n;
}

/*
 * The data path's call shapes with no device (CallShapes): a stand-in provider whose poll_cq and
 * post_send do the trivial part of the real ones (an empty queue's index compare; walking the
 * request chain and counting), reached through a function pointer as libibverbs' inline
 * ibv_poll_cq and ibv_post_send reach the provider's.
 */
struct pvb_fake_cq {
	struct ibv_cq cq; /* what the typed API reads (StandInProvider); the stand-in's own state follows */
	uint32_t head, tail;
};

struct pvb_fake_qp {
	struct ibv_qp qp;
	uint64_t posted;
	uint64_t last_id;
};

static int pvb_fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct pvb_fake_cq *q = (struct pvb_fake_cq *) cq;
	(void) wc;
	return q->head == q->tail || n <= 0 ? 0 : 1;
}

static int pvb_fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct pvb_fake_qp *q = (struct pvb_fake_qp *) qp;
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0) {
			*bad = wr;
			return EINVAL;
		}
		q->posted++;
		q->last_id = wr->wr_id;
	}
	return 0;
}

typedef int (*pvb_poll_fn)(struct ibv_cq *, int, struct ibv_wc *);
typedef int (*pvb_post_fn)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **);

long pvb_fake_cq_size(void) { return sizeof(struct pvb_fake_cq); }
long pvb_fake_qp_size(void) { return sizeof(struct pvb_fake_qp); }
long pvb_fake_qp_last_id_offset(void) { return offsetof(struct pvb_fake_qp, last_id); }

void *pvb_fake_poll_fn(void) { return (void *) pvb_fake_poll_cq; }
void *pvb_fake_post_fn(void) { return (void *) pvb_fake_post_send; }

/* C through the function pointer, n times (volatile: the compiler may not inline or hoist it). */
long pvb_fake_poll_loop(struct ibv_cq *cq, struct ibv_wc *wc, long n)
{
	pvb_poll_fn volatile fn = pvb_fake_poll_cq;
	long found = 0;
	for (long i = 0; i < n; i++)
		found += fn(cq, 16, wc);
	return found;
}

long pvb_fake_post_loop(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad, long n)
{
	pvb_post_fn volatile fn = pvb_fake_post_send;
	long failed = 0;
	for (long i = 0; i < n; i++)
		failed += fn(qp, wr, bad) != 0;
	return failed;
}
