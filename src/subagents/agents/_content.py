"""How the bundled agents read a prompt's content blocks as text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from subagents.protocol import acp

if TYPE_CHECKING:
    from subagents.protocol.acp import ContentBlock

__all__ = ("describe_block",)


def describe_block(block: ContentBlock) -> str:
    """A text block as is; other blocks described, never read or decoded:
    ``[resource_link NAME URI]``, an embedded resource's text (or ``[resource URI]``),
    ``[image MIME]``, ``[audio MIME]``."""
    if isinstance(block, acp.TextContentBlock):
        return block.text
    if isinstance(block, acp.ResourceLinkContentBlock):
        return f"[resource_link {block.name} {block.uri}]"
    if isinstance(block, acp.ResourceContentBlock):
        resource = block.resource
        text = getattr(resource, "text", None)
        return text if isinstance(text, str) else f"[resource {resource.uri}]"
    return f"[{block.type} {block.mime_type}]"
