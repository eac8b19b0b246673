"""The icons RankLab draws: Lucide's (static/vendor/lucide/, ISC), inlined as SVG by app.icons.

Pages never rely on an emoji font (many Linux desktops have none, and every emoji then shows as an
empty box). A badge's `icon:` names one of NAMES; the emoji that badges used before are still
accepted and mean the icon EMOJI gives them. Standard library only: the content schema uses it.
"""

from __future__ import annotations

NAMES = frozenset(
    {
        "award", "brain", "cake-slice", "calculator", "compass", "cpu", "database", "dices",
        "file-text", "flask-conical", "gauge", "git-merge", "handshake", "hourglass", "layers",
        "lightbulb", "lock", "microchip", "music", "network", "pen-line", "puzzle", "repeat",
        "rocket", "rotate-ccw", "ruler", "save", "scissors", "search", "shield-check", "star",
        "target", "timer", "trophy", "zap",
    }
)  # fmt: skip

# Emoji once used as icons, and the icon each now stands for (variation selectors dropped).
EMOJI = {
    "🎖": "award", "🏅": "award", "🏆": "trophy", "🎼": "music", "🎵": "music", "📏": "ruler",
    "🔒": "lock", "🍰": "cake-slice", "🤝": "handshake", "🧮": "calculator", "🧭": "compass",
    "🎲": "dices", "🕵": "search", "🔍": "search", "⏱": "timer", "🎯": "target", "🃏": "layers",
    "🔁": "repeat", "⚡": "zap", "✍": "pen-line", "🧪": "flask-conical", "📄": "file-text",
    "💡": "lightbulb", "💾": "save", "🚀": "rocket", "✂": "scissors", "⏳": "hourglass",
    "🧠": "brain", "🧩": "puzzle", "⭐": "star", "🔄": "rotate-ccw",
}  # fmt: skip

DEFAULT = "award"


def resolve(icon: str) -> str | None:
    """The icon name `icon` stands for (a name, or an emoji from EMOJI); None if neither."""
    if icon in NAMES:
        return icon
    return EMOJI.get(icon.replace("\ufe0f", "").strip())
