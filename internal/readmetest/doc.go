// Package readmetest walks README.md: it runs every sh block of it, in
// order, as a new user would — in a scratch directory that holds the
// repository's files, with `./ustore` built and a `ustore serve` running
// in place of `make run` — so that the README cannot drift from the
// commands it shows. The walk is TestReadme_Walk; blocks.go reads the
// blocks and the markers that steer the walk.
//
// A marker is an HTML comment on the last non-blank line before a block's
// fence, invisible on the rendered page but plain in the source:
//
//	<!-- readme-walk: skip (REASON) -->     the block is not run, for REASON
//	                                        (runs forever, installs into the
//	                                        system, takes hours)
//	<!-- readme-walk: check-trace SPAN -->  after the block, a trace with a
//	                                        span SPAN of service ustore must
//	                                        reach the Jaeger the block started
//	                                        on its documented query port
//	<!-- readme-walk: needs PATH -->        the block runs where PATH (absolute)
//	                                        exists, and is skipped, saying so,
//	                                        where it does not (/dev/fuse)
//
// Invariants:
//
//  1. Every sh block runs, unless a skip marker with a reason stands before
//     it, or a needs marker whose path is missing here: a block that fails
//     without one fails the walk (TestReadme_Walk).
//  2. A marker is one of the three above and stands before an sh block; any
//     other comment starting "readme-walk:", or one before no block, is an
//     error (ParseBlocks), so that a typo cannot skip a block silently.
//  3. Blocks run with bash -e -o pipefail, each in a process group of its
//     own that is ended after it, so that what a block starts in the
//     background (Jaeger, a second server) never outlives it.
//  4. `ustore` is not on the blocks' PATH: a block must say ./ustore, as a
//     reader who ran `make run` has it.
package readmetest
