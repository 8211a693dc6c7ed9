"""Ways into real meetings: the delegate as a part of other frameworks' pipelines (pipecat, an optional extra).

`delegates` holds what decides (in this process, or a delegate server over the wire protocol) and knows no
framework; `pipecat` is the only module that imports pipecat.
"""
