/**
 * Why RDMA does or does not work on this host: {@link io.github.panamaverbs.diagnostics.Doctor}
 * checks the libraries, kernel modules, device files, devices, ports, GIDs, the memlock limit and
 * native access, and names the command that fixes each problem. It uses the verbs API; nothing in
 * the verbs API depends on it.
 *
 * <p>Unless stated otherwise, passing null to a method of this package throws
 * {@link java.lang.NullPointerException}.
 */
package io.github.panamaverbs.diagnostics;
