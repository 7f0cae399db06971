// SPDX-License-Identifier: Apache-2.0
import Foundation

extension GatewayConfiguration {
    /// The secrets demo mode uses, which the README, the examples and the banner print: a
    /// production start with one of them would let anyone who read the documentation mint app
    /// tokens for any user, create, close and refund orders, or sign WeChat's notifies. Refused by
    /// name, never by value.
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
        // WeChat's documentation's sample key, which demo mode and the simulator use: with it,
        // anyone could sign a payment notify (and decrypt a refund notify) the gateway believes.
        if environment.get("WXPAY_API_KEY") == Self.demoKey {
            problems.append(ConfigurationProblem(
                "WXPAY_API_KEY", .conflict,
                expected: "your merchant's API key (merchant platform → API security): this value is the sample key "
                    + "of WeChat's documentation and demo mode's, published"))
        }
        if environment.get("WXPAY_API_V3_KEY") == Self.demoAPIv3Key {
            problems.append(ConfigurationProblem(
                "WXPAY_API_V3_KEY", .conflict,
                expected: "your merchant's APIv3 key (merchant platform → API security): this value is demo mode's, "
                    + "public in the gateway's source"))
        }
        return problems
    }
}
