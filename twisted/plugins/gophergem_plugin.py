from twisted.application.service import ServiceMaker

gophergem = ServiceMaker(
    "gophergem", "gophergem.tap", "Gopher and Gemini for AI assistants over MCP.", "gophergem"
)
