"""The knowledge engine, in five stages that import one way (tests/architecture/test_layers.py):
model < upstream < scan < judge < products. Each stage's __init__ is its face: code outside
harness/knowledge imports the faces, never a stage's modules."""
