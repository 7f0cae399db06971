// SPDX-License-Identifier: Apache-2.0
import Foundation

extension GatewayConfiguration {
    /// The secrets demo mode uses, which the README, the examples and the banner print: a
    /// production start with one of them would let anyone who read the documentation mint app
    /// tokens for any user, or create, close and refund orders. Refused by name, never by value.
    static func publishedSecretsChecks(_ configuration: GatewayConfiguration, _ environment: Environment) -> [ConfigurationProblem] {
        guard !configuration.demo else { return [] }
        let expected = "a secret of your own: this value is demo mode's, published in the documentation"
        var problems: [ConfigurationProblem] = []
        if configuration.clientTokens.contains(Self.demoClientToken) || configuration.clientTokens.contains(Self.demoSupportToken) {
            problems.append(ConfigurationProblem("GATEWAY_CLIENT_TOKENS", .conflict, expected: expected))
        }
        if configuration.supportTokens.contains(Self.demoSupportToken) || configuration.supportTokens.contains(Self.demoClientToken) {
            problems.append(ConfigurationProblem("GATEWAY_SUPPORT_TOKENS", .conflict, expected: expected))
        }
        if configuration.app.tokenSecrets.contains(AppConfiguration.demoTokenSecret) {
            problems.append(ConfigurationProblem("GATEWAY_APP_TOKEN_SECRETS", .conflict, expected: expected))
        }
        return problems
    }
}
