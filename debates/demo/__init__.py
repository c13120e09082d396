"""The demo studies: their content (one module per design) and the one loader that the
`load_demo` command, the tests and the benchmarks use."""
