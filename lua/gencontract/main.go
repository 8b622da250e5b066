// Command gencontract writes lua/contract.lua from lua/contract.go's tables
// (go generate ./lua runs it in lua/).
package main

import (
	"log"
	"os"

	"github.com/gmq/gmq/lua"
)

func main() {
	if err := os.WriteFile(lua.ContractFile, []byte(lua.ContractLua()), 0o644); err != nil {
		log.Fatalf("gencontract: %v", err)
	}
}
