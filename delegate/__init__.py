"""Meeting Delegate: attends live meetings on behalf of a person."""

__version__ = "0.1.0"
