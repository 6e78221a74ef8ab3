//! `pactum new eval PRC-...`: a suite and a dataset scaffolded from a contract's examples.
