"""ajetd: a tmux-native supervisor for RL training runs."""

__version__ = "0.1.0"
