"""The floor reader, the text model, fine-tuned on careful readers' labels and scored beside the trees (issue 43)."""
