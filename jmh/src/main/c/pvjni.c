/* The JNI twin of the FFM call-overhead benchmark: a no-op native method, as DiSNI would call it. */
#include <jni.h>

JNIEXPORT void JNICALL Java_io_github_panamaverbs_jmh_JniNoop_noop(JNIEnv *env, jclass cls)
{
	(void) env;
	(void) cls;
}


/* The data path's shapes through JNI (CallShapes): the provider's function pointer and the
 * objects as jlongs, as a JNI binding passes them. */
#include <infiniband/verbs.h>
#include <stdint.h>

JNIEXPORT jint JNICALL Java_io_github_panamaverbs_jmh_JniNoop_poll(JNIEnv *env, jclass cls, jlong fn, jlong cq, jint n, jlong wc)
{
	(void) env;
	(void) cls;
	return ((int (*)(struct ibv_cq *, int, struct ibv_wc *)) (intptr_t) fn)(
		(struct ibv_cq *) (intptr_t) cq, n, (struct ibv_wc *) (intptr_t) wc);
}

JNIEXPORT jint JNICALL Java_io_github_panamaverbs_jmh_JniNoop_post(JNIEnv *env, jclass cls, jlong fn, jlong qp, jlong wr, jlong bad)
{
	(void) env;
	(void) cls;
	return ((int (*)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **)) (intptr_t) fn)(
		(struct ibv_qp *) (intptr_t) qp, (struct ibv_send_wr *) (intptr_t) wr, (struct ibv_send_wr **) (intptr_t) bad);
}
