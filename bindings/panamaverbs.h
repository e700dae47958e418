/* Input header for jextract (see regenerate.sh): the two rdma-core APIs bound by panama-verbs. */
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
