"""Text: word embeddings, clustered vocabularies and word privatization (seed imola2022 5.1)."""

from .embeddings import Embeddings, load_glove
from .vocabulary import sample_vocabulary

__all__ = ["Embeddings", "load_glove", "sample_vocabulary"]
