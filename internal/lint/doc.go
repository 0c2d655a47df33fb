// Package lint holds repository-wide checks that run as tests: the direction
// of imports between ustore's packages (docs/ARCHITECTURE.md, "Packages and
// the direction of imports"), the third-party modules one package owns, and
// that no shipped file refers outside the repository. It has no code of its
// own.
package lint
