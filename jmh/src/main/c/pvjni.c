/* The JNI twin of the FFM call-overhead benchmark: a no-op native method, as DiSNI would call it. */
#include <jni.h>

JNIEXPORT void JNICALL Java_io_github_panamaverbs_jmh_JniNoop_noop(JNIEnv *env, jclass cls)
{
	(void) env;
	(void) cls;
}

