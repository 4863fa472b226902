print("prompt agent")
