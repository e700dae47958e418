/**
 * Friend access between the module's public packages: what the connection manager and the
 * diagnostics need of the verbs package beyond its public API ({@link io.github.panamaverbs.access.VerbsAccess}).
 * Not exported.
 */
package io.github.panamaverbs.access;
