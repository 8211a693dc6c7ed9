"""Speech to text: the Transcriber seam, the faster-whisper recogniser, and the process's decode queue."""
