"""Graph node-classification data for the f-SNN graph experiments (SGCN / DRSGNN).

Modules: :mod:`fsnn.graphs.data` (``load_graph``, ``graph_dataset_info``, ``GRAPH_DATASETS``),
:mod:`fsnn.graphs.features` (sparse SGC propagation, standardisation, Laplacian / random-walk positional
encodings, edge dropping, feature masking, on-disk cache), :mod:`fsnn.graphs.fixtures` (tiny fakes in the
real raw formats). Import the submodules directly; this file deliberately imports nothing.
"""
