"""The composition roots: the `rawp` command table, `rawp up`, the gateway's wiring (`launch`),
`rawp doctor` and the settings documentation generated from every tier. The one package that
may import all the others (docs/architecture.md, Layout)."""
